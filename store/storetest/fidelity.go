package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// testOddBytes checks that a state carrying what OpenTofu writes for
// `for_each = toset(["a\u0000b"])` — a NUL in an index key — and worse (a
// NUL in a resource name, a module key, an output name, terraform_version,
// a lock id; bytes that are not UTF-8; escapes jsonb cannot hold; numbers
// beyond float64) is stored byte for byte, read back in byte order, and
// that every view still answers for every state.
func testOddBytes(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name = "odd"

	each := graph.Resource{Mode: "managed", Type: "terraform_data", Name: "x", Each: "map", Provider: `provider["terraform.io/builtin/terraform"]`}
	nul := graph.Resource{Module: "module.m[\"\x00\"]", Mode: "managed", Type: "terraform_data", Name: "n\x00ul", Provider: `provider["terraform.io/builtin/terraform"]`}
	ins := []graph.Instance{
		// OpenTofu escapes the NUL in the state's JSON; the key holds it.
		instance(t, each, strKey("a\x00b"), `{"id":"a\u0000b","input":"a\u0000b"}`, "module.m[\"\x00\"].terraform_data.n\x00ul"),
		instance(t, each, strKey("a"), `{"id":"a","input":"\ud800 alone"}`),
		instance(t, each, strKey("a\x7fb"), `{"id":"del","big":1e400,"huge":1e999999,"tiny":1e-99999}`),
		instance(t, each, strKey("\xff\xfe"), "{\"id\":\"\xff\",\"latin1\":\"caf\xe9\",\"ok\":\"\u00e9\"}"),
		instance(t, nul, graph.IndexKey{}, `{"id":"nul"}`),
	}
	deposed := newInstance(t, each, object(strKey("a\x00b"), "", "d\x00", `{"id":"old"}`, nil))
	ins = append(ins, deposed)
	outs := []graph.Output{
		graph.NewOutput("o\x00", []byte(`{"value":"v\u0000","type":"string"}`)),
		graph.NewOutput("o", []byte("{\"value\":\"\xff\",\"type\":\"string\"}")),
	}
	// (LockInfo is kept as JSON, which holds a NUL but no bytes that are not
	// UTF-8; nor can a LOCK body, which is JSON, carry them.)
	const lockID = "lock\x00"
	lock(t, s, name, lockID, kilolock.LockExclusive)
	if got := state(t, s, name).Locks[0].Info.ID; got != lockID {
		t.Errorf("lock id = %q, want %q", got, lockID)
	}
	c := next(t, s, name)
	c.LockID = lockID
	c.Version.TerraformVersion = "1.9.0\x00"
	c.Version.Lineage = lineage + "\x00\xff"
	c.Version.Actor = "a\x00\xfe"
	c.Upserts = ins
	c.OutputUpserts = outs
	c.CheckResults = []byte("[{\"status\":\"\xff\"}]")
	v := commit(t, s, name, c)

	snap, err := s.Snapshot(ctx, name, v.Number)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ got, want string }{
		{snap.Version.TerraformVersion, c.Version.TerraformVersion},
		{snap.Version.Lineage, c.Version.Lineage},
		{snap.Version.Actor, c.Version.Actor},
		{snap.Version.LockID, lockID},
		{string(snap.CheckResults), string(c.CheckResults)},
	} {
		if f.got != f.want {
			t.Errorf("Snapshot gave %q, want %q", f.got, f.want)
		}
	}
	wantIns := slices.Clone(ins)
	slices.SortFunc(wantIns, func(a, b graph.Instance) int { return strings.Compare(a.ID(), b.ID()) })
	if diff := cmp.Diff(wantIns, snap.Instances, cmpOpts...); diff != "" {
		t.Errorf("Snapshot.Instances, in byte order of their IDs (-want +got):\n%s", diff)
	}
	wantOuts := []graph.Output{outs[1], outs[0]}
	if diff := cmp.Diff(wantOuts, snap.Outputs, cmpOpts...); diff != "" {
		t.Errorf("Snapshot.Outputs, in byte order (-want +got):\n%s", diff)
	}
	if st := state(t, s, name); st.Lineage != c.Version.Lineage {
		t.Errorf("state lineage = %q, want %q", st.Lineage, c.Version.Lineage)
	}

	// What reads by key find these keys.
	history, err := s.InstanceHistory(ctx, name, ins[0].Address())
	if err != nil || len(history) != 2 {
		t.Fatalf("InstanceHistory(%q) = %d intervals, %v; want the object and its deposed one", ins[0].Address(), len(history), err)
	}
	if history[0].Instance.ID() != ins[0].ID() || history[1].Instance.ID() != deposed.ID() {
		t.Errorf("InstanceHistory gave %q and %q", history[0].Instance.ID(), history[1].Instance.ID())
	}
	ids := []string{}
	for _, in := range wantIns {
		ids = append(ids, in.ID())
	}
	hashes, outHashes, err := s.HashesAt(ctx, name, v.Number, ids, []string{"o\x00", "o"})
	if err != nil || len(hashes) != len(ids) || len(outHashes) != 2 {
		t.Fatalf("HashesAt = %d instances, %d outputs, %v; want all of them", len(hashes), len(outHashes), err)
	}
	for _, in := range ins {
		if hashes[in.ID()] != in.Hash {
			t.Errorf("HashesAt(%q) = %s, want %s", in.ID(), hashes[in.ID()], in.Hash)
		}
	}
	changes, err := s.ChangesSince(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	gotIDs := []string{}
	for _, r := range changes {
		gotIDs = append(gotIDs, r.ID)
	}
	if diff := cmp.Diff(append(ids, "o", "o\x00"), gotIDs); diff != "" {
		t.Errorf("ChangesSince IDs, instances then outputs in byte order (-want +got):\n%s", diff)
	}

	odd := rejection(lockID, []string{ins[0].Address(), "output.o\x00"}, &kilolock.Winner{Actor: "w\x00", LockID: lockID, Version: 1})
	odd.Hint = "hint \xff"
	record(t, s, name, odd)
	rs, err := s.Rejections(ctx, name, 0)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Rejections = %v, %v", rs, err)
	}
	if diff := cmp.Diff(*odd, rs[0]); diff != "" {
		t.Errorf("Rejections (-want +got):\n%s", diff)
	}

	// A plain state beside it: the views answer for both.
	plain := next(t, s, "plain")
	plain.Upserts = []graph.Instance{instance(t, each, strKey("p"), `{"id":"p"}`)}
	plain.OutputUpserts = []graph.Output{output("ip", "10.0.0.1", false)}
	commit(t, s, "plain", plain)
	// (resource_dependencies may leave out the dependencies of an object
	// the database's JSON cannot hold: -1.)
	for view, want := range map[string]int{"resources": 7, "resource_dependencies": -1, "outputs": 3, "resource_history": 7,
		"version_history": 2, "rejected_commit_history": 1} {
		res, err := s.Query(ctx, kilolock.QueryLimits{}, "SELECT * FROM "+view)
		if err != nil {
			t.Errorf("SELECT * FROM %s: %v", view, err)
			continue
		}
		if want >= 0 && len(res.Rows) != want {
			t.Errorf("SELECT * FROM %s: %d rows, want %d", view, len(res.Rows), want)
		}
	}
	// Each object is readable in the views: as JSON, or as its text where
	// the database's JSON cannot hold it.
	res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT instance_id, attributes, raw_json FROM resources WHERE state = $1`, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		if row[1] == nil && row[2] == nil {
			t.Errorf("resources row of %q has neither attributes nor raw_json", row[0])
		}
	}
	res, err = s.Query(ctx, kilolock.QueryLimits{}, `SELECT attributes FROM resources WHERE state = $1`, "plain")
	if err != nil || len(res.Rows) != 1 || !sameValue(t, json0(`{"id":"p"}`), res.Rows[0][0]) {
		t.Errorf("the plain state's attributes: %v %v", res, err)
	}
}

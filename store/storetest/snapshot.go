package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/quota"
)

// model is what one version holds, as the test committed it.
type model struct {
	version   kilolock.Version
	instances map[string]graph.Instance // by graph.Instance.ID
	outputs   map[string]graph.Output
	checks    []byte
	raw       []byte
}

// testSnapshot commits ~30 versions of random upserts and removals and
// checks that Snapshot of every one of them gives back what was committed
// (with its managed count, from the commits' changes, as quotas count),
// and that ChangesSince and HashesAt agree with the same model.
func testSnapshot(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name, versions = "model", 30
	history := commitModel(t, s, name, versions, 20260501)
	checkSnapshots(t, s, name, history)
	for _, n := range []int64{0, -1, versions + 1} {
		_, err := s.Snapshot(ctx, name, n)
		errorIs(t, err, kilolock.ErrNotFound)
	}
	if ss, ok := s.(kilolock.SnapshotStreamer); ok {
		checkSnapshotEach(t, ss, name, history)
	}
	if ir, ok := s.(kilolock.IndexReader); ok {
		checkIndexReader(t, ir, name, history)
	}
	checkChanges(t, s, name, history)
	snap, err := s.Snapshot(ctx, name, versions)
	if err != nil {
		t.Fatal(err)
	}
	checkSharedHeaders(t, snap.Instances)
}

// checkSharedHeaders fails t unless the loaded instances hold each
// module, mode, type, each and provider string once, and the instances
// of one resource one name: a cached version costs its objects, not a
// copy of its headers per instance.
func checkSharedHeaders(t *testing.T, instances []kilolock.Instance) {
	t.Helper()
	first := map[string]*byte{}
	share := func(in *kilolock.Instance, key, v string) {
		if v == "" {
			return
		}
		if p, ok := first[key]; !ok {
			first[key] = unsafe.StringData(v)
		} else if p != unsafe.StringData(v) {
			t.Fatalf("instance %s: its header string %q is a copy of its own, not the one the other instances share", in.ID(), v)
		}
	}
	for i := range instances {
		in := &instances[i]
		r := &in.Resource
		for _, v := range []string{r.Module, r.Mode, r.Type, r.Each, r.Provider} {
			share(in, v, v)
		}
		share(in, r.Address(), r.Name)
	}
}

// commitModel commits versions versions of random upserts and removals
// (seeded with seed) to state name and returns what each holds.
func commitModel(t *testing.T, s kilolock.Store, name string, versions int64, seed uint64) []model {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)

	resources := []graph.Resource{
		resource("aws_instance", "web"),
		{Mode: "managed", Type: "null_resource", Name: "each", Each: "map", Provider: `provider["registry.opentofu.org/hashicorp/null"]`},
		{Module: `module.app["blue"]`, Mode: "managed", Type: "terraform_data", Name: "x", Provider: `provider["terraform.io/builtin/terraform"]`},
		{Mode: "data", Type: "aws_ami", Name: "ubuntu", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`},
		{Module: `module.app["green"].module.db`, Mode: "managed", Type: "time_sleep", Name: "wait", Each: "list", Provider: `provider["registry.opentofu.org/hashicorp/time"]`},
	}
	keyOf := func(r int, k int) graph.IndexKey {
		switch r {
		case 0, 4:
			return intKey(int64(k))
		case 1:
			return strKey(fmt.Sprintf("key-%d \"q\"", k))
		}
		return graph.IndexKey{}
	}
	// randomInstance builds an object for instance slot (r, k), possibly
	// deposed or tainted, with random attributes and dependencies.
	randomInstance := func(t *testing.T, r, k int, deposed string) graph.Instance {
		key := keyOf(r, k)
		status := ""
		if rng.IntN(8) == 0 {
			status = "tainted"
		}
		var deps []string
		for range rng.IntN(3) {
			deps = append(deps, fmt.Sprintf("aws_instance.web[%d]", rng.IntN(5)))
		}
		attrs := fmt.Sprintf(`{"id":"%d-%d","n":%d,"tags":{"v":"%x"}}`, r, k, rng.IntN(1000), rng.Uint64())
		return newInstance(t, resources[r], object(key, status, deposed, attrs, deps))
	}

	var (
		history []model
		current = model{instances: map[string]graph.Instance{}, outputs: map[string]graph.Output{}}
	)
	for n := int64(1); n <= versions; n++ {
		c := &kilolock.Commit{
			Parent: n - 1,
			Version: kilolock.Version{
				Serial: uint64(n * 2), Lineage: lineage, TerraformVersion: "1.9.0",
				Source: []kilolock.Source{kilolock.SourcePush, kilolock.SourceApply, kilolock.SourceMerge}[n%3],
				Actor:  fmt.Sprintf("actor-%d", n%4), BaseSerial: uint64(n*2 - 2), Merged: n%4 == 1,
				Format: []string{"compact", "indent"}[n%2],
			},
		}
		var added, changed, removed int
		upserted := map[string]bool{}
		// New and changed instances.
		for range 1 + rng.IntN(6) {
			r, k := rng.IntN(len(resources)), rng.IntN(4)
			deposed := ""
			if rng.IntN(10) == 0 {
				deposed = fmt.Sprintf("%08x", rng.Uint32())
			}
			in := randomInstance(t, r, k, deposed)
			id := in.ID()
			if upserted[id] {
				continue
			}
			upserted[id] = true
			if old, ok := current.instances[id]; !ok {
				added++
			} else if old.Hash != in.Hash {
				changed++
			}
			c.Upserts = append(c.Upserts, in)
		}
		// An unchanged object upserted again is no change.
		ids := slices.Sorted(maps.Keys(current.instances))
		if len(ids) > 0 && rng.IntN(2) == 0 {
			id := ids[rng.IntN(len(ids))]
			if !upserted[id] {
				upserted[id] = true
				c.Upserts = append(c.Upserts, current.instances[id])
			}
		}
		next := model{instances: maps.Clone(current.instances), outputs: maps.Clone(current.outputs)}
		for _, in := range c.Upserts {
			next.instances[in.ID()] = in
		}
		// Removals, and one of an instance that is not there.
		for _, id := range ids {
			if !upserted[id] && rng.IntN(6) == 0 {
				c.Removed = append(c.Removed, id)
				delete(next.instances, id)
				removed++
			}
		}
		if rng.IntN(3) == 0 {
			c.Removed = append(c.Removed, "aws_instance.never[7]")
		}
		// Outputs.
		for _, o := range []string{"address", "password", "count"} {
			switch rng.IntN(4) {
			case 0:
				out := output(o, fmt.Sprintf("%s-%d", o, rng.IntN(3)), o == "password")
				c.OutputUpserts = append(c.OutputUpserts, out)
				next.outputs[o] = out
			case 1:
				c.OutputsRemoved = append(c.OutputsRemoved, o)
				delete(next.outputs, o)
			}
		}
		if rng.IntN(3) > 0 {
			c.CheckResults = fmt.Appendf(nil, `[{"object_kind":"resource","config_addr":"aws_instance.web","status":"pass","objects":[{"object_addr":"aws_instance.web[0]","status":"pass","n":%d}]}]`, n)
		}
		if rng.IntN(3) == 0 {
			c.Raw = []byte{0x1f, 0x8b, 0x08, 0x00, byte(n), 0xff, 0xfe}
		}
		next.checks, next.raw = c.CheckResults, c.Raw

		v, _, err := s.Commit(ctx, name, c)
		if err != nil {
			t.Fatalf("version %d: %v", n, err)
		}
		want := c.Version
		want.ID, want.State, want.Number, want.Created = v.ID, name, n, v.Created
		want.Added, want.Changed, want.Removed, want.Instances = added, changed, removed, len(next.instances)
		for _, in := range next.instances {
			if quota.Counts(in.Resource.Mode, in.Deposed) {
				want.Managed++
			}
		}
		if diff := cmp.Diff(want, *v); diff != "" {
			t.Errorf("version %d: Commit returned (-want +got):\n%s", n, diff)
		}
		next.version = *v
		history = append(history, next)
		current = next
	}
	return history
}

// checkSnapshots checks that Snapshot of every version of history gives
// back what the model holds.
func checkSnapshots(t *testing.T, s kilolock.Store, name string, history []model) {
	t.Helper()
	ctx := context.Background()
	for _, m := range history {
		n := m.version.Number
		snap, err := s.Snapshot(ctx, name, n)
		if err != nil {
			t.Fatalf("Snapshot(%d): %v", n, err)
		}
		if diff := cmp.Diff(m.version, snap.Version); diff != "" {
			t.Errorf("Snapshot(%d).Version (-want +got):\n%s", n, diff)
		}
		got := map[string]graph.Instance{}
		for _, in := range snap.Instances {
			if _, dup := got[in.ID()]; dup {
				t.Errorf("Snapshot(%d) holds %s twice", n, in.ID())
			}
			got[in.ID()] = in
		}
		if diff := cmp.Diff(m.instances, got, cmpOpts...); diff != "" {
			t.Errorf("Snapshot(%d).Instances (-want +got):\n%s", n, diff)
		}
		gotOutputs := map[string]graph.Output{}
		for _, o := range snap.Outputs {
			gotOutputs[o.Name] = o
		}
		if diff := cmp.Diff(m.outputs, gotOutputs, cmpOpts...); diff != "" {
			t.Errorf("Snapshot(%d).Outputs (-want +got):\n%s", n, diff)
		}
		if string(m.checks) != string(snap.CheckResults) || (m.checks == nil) != (snap.CheckResults == nil) {
			t.Errorf("Snapshot(%d).CheckResults = %q, want %q", n, snap.CheckResults, m.checks)
		}
		if string(m.raw) != string(snap.Raw) || (m.raw == nil) != (snap.Raw == nil) {
			t.Errorf("Snapshot(%d).Raw = %x, want %x", n, snap.Raw, m.raw)
		}
	}
}

// checkSnapshotEach checks that SnapshotEach gives each version's
// instances, each once, and the rest of its Snapshot; that an error of
// each stops it and is returned; and that a missing version is
// ErrNotFound.
func checkSnapshotEach(t *testing.T, s kilolock.SnapshotStreamer, name string, history []model) {
	t.Helper()
	ctx := context.Background()
	for _, m := range history {
		n := m.version.Number
		got := map[string]graph.Instance{}
		snap, err := s.SnapshotEach(ctx, name, n, func(in *kilolock.Instance) error {
			if _, dup := got[in.ID()]; dup {
				t.Errorf("SnapshotEach(%d) gives %s twice", n, in.ID())
			}
			cp := *in
			cp.Object = slices.Clone(in.Object) // valid only during the call
			got[in.ID()] = cp
			return nil
		})
		if err != nil {
			t.Fatalf("SnapshotEach(%d): %v", n, err)
		}
		if len(snap.Instances) != 0 {
			t.Errorf("SnapshotEach(%d) also keeps %d instances", n, len(snap.Instances))
		}
		if diff := cmp.Diff(m.instances, got, cmpOpts...); diff != "" {
			t.Errorf("SnapshotEach(%d) instances (-want +got):\n%s", n, diff)
		}
		if diff := cmp.Diff(m.version, snap.Version); diff != "" {
			t.Errorf("SnapshotEach(%d).Version (-want +got):\n%s", n, diff)
		}
		if len(snap.Outputs) != len(m.outputs) || string(m.raw) != string(snap.Raw) || string(m.checks) != string(snap.CheckResults) {
			t.Errorf("SnapshotEach(%d): %d outputs, raw %x, checks %q; want %d, %x, %q", n, len(snap.Outputs), snap.Raw, snap.CheckResults, len(m.outputs), m.raw, m.checks)
		}
	}
	last := history[len(history)-1].version.Number
	stop := errors.New("stop here")
	calls := 0
	if _, err := s.SnapshotEach(ctx, name, last, func(*kilolock.Instance) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("SnapshotEach with each failing: %v after %d calls; want its error after 1", err, calls)
	}
	_, err := s.SnapshotEach(ctx, name, last+1, func(*kilolock.Instance) error { return nil })
	errorIs(t, err, kilolock.ErrNotFound)
}

// checkIndexReader checks that SnapshotHashes gives each version's
// instance hashes by ID and the rest of its Snapshot but its raw
// document, that SnapshotOutputs gives that rest too, that SnapshotSome gives the instances asked for that the
// version holds, objects and all, and that a missing version is
// ErrNotFound for each.
func checkIndexReader(t *testing.T, s kilolock.IndexReader, name string, history []model) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	for i, m := range history {
		n := m.version.Number
		snap, hashes, spelled, err := s.SnapshotHashes(ctx, name, n)
		if err != nil {
			t.Fatalf("SnapshotHashes(%d): %v", n, err)
		}
		want := map[string]graph.Hash{}
		for id, in := range m.instances {
			want[id] = in.Hash
		}
		if diff := cmp.Diff(want, hashes); diff != "" {
			t.Errorf("SnapshotHashes(%d) hashes (-want +got):\n%s", n, diff)
		}
		if len(spelled) != 0 {
			t.Errorf("SnapshotHashes(%d): %d spellings of instances committed with none", n, len(spelled))
		}
		if diff := cmp.Diff(m.version, snap.Version); diff != "" {
			t.Errorf("SnapshotHashes(%d).Version (-want +got):\n%s", n, diff)
		}
		if len(snap.Instances) != 0 || snap.Raw != nil || len(snap.Outputs) != len(m.outputs) || string(m.checks) != string(snap.CheckResults) {
			t.Errorf("SnapshotHashes(%d): %d instances, raw %x, %d outputs, checks %q; want none, none, %d, %q", n, len(snap.Instances), snap.Raw, len(snap.Outputs), snap.CheckResults, len(m.outputs), m.checks)
		}
		for _, out := range snap.Outputs {
			if w, ok := m.outputs[out.Name]; !ok || w.Hash != out.Hash {
				t.Errorf("SnapshotHashes(%d): output %s of hash %x, want %x", n, out.Name, out.Hash, w.Hash)
			}
		}
		outs, err := s.SnapshotOutputs(ctx, name, n)
		if err != nil {
			t.Fatalf("SnapshotOutputs(%d): %v", n, err)
		}
		if diff := cmp.Diff(snap, outs, cmpOpts...); diff != "" {
			t.Errorf("SnapshotOutputs(%d) is not SnapshotHashes' snapshot (-hashes +outputs):\n%s", n, diff)
		}
		// Some IDs it holds, one of another version, one never committed.
		var ids []string
		wantSome := map[string]graph.Instance{}
		for id, in := range m.instances {
			if rng.IntN(3) == 0 {
				ids = append(ids, id)
				wantSome[id] = in
			}
		}
		for id := range history[(i+7)%len(history)].instances {
			if _, ok := m.instances[id]; !ok {
				ids = append(ids, id)
				break
			}
		}
		ids = append(ids, "aws_instance.never[0]")
		some, err := s.SnapshotSome(ctx, name, n, ids)
		if err != nil {
			t.Fatalf("SnapshotSome(%d): %v", n, err)
		}
		got := map[string]graph.Instance{}
		for i, in := range some {
			if i > 0 && some[i-1].ID() >= in.ID() {
				t.Errorf("SnapshotSome(%d): %s after %s, want ID order", n, in.ID(), some[i-1].ID())
			}
			got[in.ID()] = in
		}
		if diff := cmp.Diff(wantSome, got, cmpOpts...); diff != "" {
			t.Errorf("SnapshotSome(%d) (-want +got):\n%s", n, diff)
		}
	}
	last := history[len(history)-1].version.Number
	_, _, _, err := s.SnapshotHashes(ctx, name, last+1)
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = s.SnapshotSome(ctx, name, last+1, []string{"x"})
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = s.SnapshotOutputs(ctx, name, last+1)
	errorIs(t, err, kilolock.ErrNotFound)
	_, _, _, err = s.SnapshotHashes(ctx, "no-such-state", 1)
	errorIs(t, err, kilolock.ErrNotFound)
}

// testHistory checks History's order, Limit and Before.
func testHistory(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name = "history"
	var all []kilolock.Version // newest first
	for range 55 {
		c := next(t, s, name)
		c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "h"), intKey(int64(len(all))), `{"id":"x"}`))
		all = append([]kilolock.Version{*commit(t, s, name, c)}, all...)
	}
	lock(t, s, "history-empty", "a", kilolock.LockExclusive)

	tests := []struct {
		state string
		opts  kilolock.HistoryOptions
		want  []kilolock.Version
	}{
		{name, kilolock.HistoryOptions{}, all[:50]},
		{name, kilolock.HistoryOptions{Limit: 100}, all},
		{name, kilolock.HistoryOptions{Limit: 2}, all[:2]},
		{name, kilolock.HistoryOptions{Before: 4}, all[52:]},
		{name, kilolock.HistoryOptions{Before: 4, Limit: 2}, all[52:54]},
		{name, kilolock.HistoryOptions{Before: 1}, nil},
		{name, kilolock.HistoryOptions{Before: 100, Limit: 1}, all[:1]},
		{"history-empty", kilolock.HistoryOptions{}, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s limit %d before %d", tt.state, tt.opts.Limit, tt.opts.Before), func(t *testing.T) {
			got, err := s.History(ctx, tt.state, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Error("History returned nil, want an empty list")
			}
			if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
				t.Errorf("History (-want +got):\n%s", diff)
			}
		})
	}
}

// testDelete checks that Delete removes a state and nothing else, and that
// version ids are not reused.
func testDelete(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	ids := map[int64]bool{}
	build := func(name string) {
		for i := range 3 {
			c := next(t, s, name)
			c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "d"), intKey(int64(i)), `{"id":"x"}`))
			c.OutputUpserts = append(c.OutputUpserts, output("o", fmt.Sprint(i), false))
			c.Raw = []byte("raw")
			ids[commit(t, s, name, c).ID] = true
		}
	}
	build("doomed")
	build("kept")
	lock(t, s, "doomed", "a", kilolock.LockExclusive)
	record(t, s, "doomed", rejection("a", []string{"aws_instance.d[0]"}, &kilolock.Winner{Actor: "w", LockID: "b", Version: 2}))
	record(t, s, "kept", rejection("k", nil, nil))
	kept := freeze(t, s, "kept")
	keptRejections, err := s.Rejections(ctx, "kept", 0)
	if err != nil {
		t.Fatal(err)
	}

	// A locked state is deleted only by its holder (lock "a"), or by force.
	_, err = s.Delete(ctx, "doomed", kilolock.DeleteOptions{LockID: "someone-else"})
	var locked *kilolock.LockedError
	if !errors.As(err, &locked) || locked.Holder.ID != "a" {
		t.Fatalf("Delete of a state locked by another = %v; want a LockedError naming lock a", err)
	}
	if _, err := s.State(ctx, "doomed"); err != nil {
		t.Fatalf("the refused Delete removed the state: %v", err)
	}
	if n, err := s.Delete(ctx, "doomed", kilolock.DeleteOptions{LockID: "a"}); err != nil || n != 3 {
		t.Fatalf("Delete by the holder = %d, %v; want its 3 versions", n, err)
	}
	_, err = s.State(ctx, "doomed")
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = s.History(ctx, "doomed", kilolock.HistoryOptions{})
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = s.Snapshot(ctx, "doomed", 1)
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = s.Delete(ctx, "doomed", kilolock.DeleteOptions{Force: true})
	errorIs(t, err, kilolock.ErrNotFound)
	_, err = s.Rejections(ctx, "doomed", 0)
	errorIs(t, err, kilolock.ErrNotFound)
	for _, view := range []string{"resources", "resource_dependencies", "outputs", "resource_history", "version_history", "rejected_commit_history"} {
		res, err := s.Query(ctx, kilolock.QueryLimits{}, "SELECT count(*) FROM "+view+" WHERE state = $1", "doomed")
		if err != nil {
			t.Fatalf("query %s: %v", view, err)
		}
		if n := asInt(t, res.Rows[0][0]); n != 0 {
			t.Errorf("%s has %d rows of the deleted state", view, n)
		}
	}
	kept.unchanged(t, s, "kept")
	if got, err := s.Rejections(ctx, "kept", 0); err != nil || !cmp.Equal(keptRejections, got, cmpOpts...) {
		t.Errorf("rejections of the kept state = %+v, %v; want %+v", got, err, keptRejections)
	}

	// A state created again under the name starts over, with new ids.
	build("doomed")
	h, err := s.History(ctx, "doomed", kilolock.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[2].Number != 1 {
		t.Errorf("history of the new state = %+v", h)
	}
	if len(ids) != 9 {
		t.Errorf("version ids were reused: %d distinct of 9", len(ids))
	}
	if st := state(t, s, "doomed"); len(st.Locks) != 0 {
		t.Errorf("the new state has the old locks: %+v", st.Locks)
	}
	if got, err := s.Rejections(ctx, "doomed", 0); err != nil || len(got) != 0 {
		t.Errorf("the new state has the old rejections: %+v, %v", got, err)
	}
}

// testSpellings: the intervals a POST opens keep its lean instances'
// spellings (graph.Instance.Spelling) and canonical hashes, and
// SnapshotHashes gives back those of the version asked for: every
// instance of a first POST in the CLI's layout, then the changed
// instances' new spellings in place of their old ones, the unchanged'
// as they were; none for a version the server made (a rollback).
func testSpellings(t *testing.T, open Opener) {
	ir, ok := open(t).(kilolock.IndexReader)
	if !ok {
		t.Skip("the store is no IndexReader")
	}
	s := ir.(kilolock.Store)
	ctx := context.Background()
	e := kilolock.NewEngine(s, kilolock.Options{})
	const name = "spelled"
	v1 := graphtest.Generate(40, 120, graph.FormatIndent)
	v2 := graphtest.Change(v1, []int{3, 30}, graph.FormatIndent)
	for n, doc := range [][]byte{v1, v2} {
		if _, err := e.Write(ctx, name, doc, kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		lean, err := graph.ParseWith(doc, graph.ParseOptions{Lean: true})
		if err != nil {
			t.Fatal(err)
		}
		want := map[graph.Hash]graph.Spelled{}
		for i := range lean.Instances {
			in := &lean.Instances[i]
			sp, ok := in.Spelling()
			if !ok {
				t.Fatalf("%s of a lean parse knows no spelling", in.ID())
			}
			want[sp] = graph.Spelled{Hash: in.Hash, Canonical: in.CanonicalHash()}
		}
		_, hashes, spelled, err := ir.SnapshotHashes(ctx, name, int64(n+1))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, spelled); diff != "" || len(hashes) != len(lean.Instances) {
			t.Errorf("SnapshotHashes(%d): %d hashes, spellings (-want +got):\n%s", n+1, len(hashes), diff)
		}
	}
	// Instance 5 changed, in a layout neither CLI writes (deeper
	// indentation): its new interval keeps no spelling, and the others,
	// respelled only, keep their intervals and v2's spellings.
	v3 := bytes.ReplaceAll(graphtest.Change(v2, []int{5}, graph.FormatIndent), []byte("\n"), []byte("\n "))
	if res, err := e.Write(ctx, name, v3, kilolock.WriteOptions{}); err != nil || res.Version.Changed != 1 {
		t.Fatalf("the respelled write: %+v, %v; want 1 changed", res, err)
	}
	_, hashes, spelled, err := ir.SnapshotHashes(ctx, name, 3)
	if err != nil || len(hashes) != 40 || len(spelled) != 39 {
		t.Errorf("SnapshotHashes(3): %d hashes, %d spellings, %v; want 40, and the 39 unchanged instances' spellings", len(hashes), len(spelled), err)
	}
}

// spelledDocs are the documents of CommitSpelled and
// CheckSpellingsUpgrade: 30 instances in the CLI's layout, then 2 of them
// changed.
func spelledDocs() (v1, v2 []byte) {
	v1 = graphtest.Generate(30, 100, graph.FormatIndent)
	return v1, graphtest.Change(v1, []int{4, 20}, graph.FormatIndent)
}

// CommitSpelled posts the first of spelledDocs to the state "spelled"
// through an Engine: a version whose intervals keep their spellings, for
// a test of the migration that added them to take away.
func CommitSpelled(t testing.TB, s kilolock.Store) {
	t.Helper()
	v1, _ := spelledDocs()
	if _, err := kilolock.NewEngine(s, kilolock.Options{}).Write(context.Background(), "spelled", v1, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// CheckSpellingsUpgrade checks the state of CommitSpelled once the store
// was upgraded from a schema without spellings: its intervals know none
// (NULL), a write on it through an Engine that never cached it parses
// the body in full and is exact (2 changed, the posted bytes read back),
// and the intervals it opens know theirs.
func CheckSpellingsUpgrade(t testing.TB, s kilolock.Store) {
	t.Helper()
	ctx := context.Background()
	ir, ok := s.(kilolock.IndexReader)
	if !ok {
		t.Fatalf("%T is no IndexReader", s)
	}
	_, hashes, spelled, err := ir.SnapshotHashes(ctx, "spelled", 1)
	if err != nil || len(hashes) != 30 || len(spelled) != 0 {
		t.Fatalf("after the upgrade: %d hashes, %d spellings, %v; want 30, none", len(hashes), len(spelled), err)
	}
	_, v2 := spelledDocs()
	res, err := kilolock.NewEngine(s, kilolock.Options{}).Write(ctx, "spelled", v2, kilolock.WriteOptions{})
	if err != nil || res.Version.Changed != 2 || res.Version.Added+res.Version.Removed != 0 {
		t.Fatalf("a write after the upgrade: %+v, %v; want 2 changed", res, err)
	}
	d, err := kilolock.NewEngine(s, kilolock.Options{}).Read(ctx, "spelled")
	if err != nil || !bytes.Equal(d.Bytes, v2) {
		t.Fatalf("read after the upgrade: %v; want the bytes posted", err)
	}
	if _, _, spelled, err = ir.SnapshotHashes(ctx, "spelled", 2); err != nil || len(spelled) != 2 {
		t.Errorf("after a write on the upgraded state: %d spellings, %v; want the 2 changed instances'", len(spelled), err)
	}
}

package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// testChanges checks ChangesSince and HashesAt on a short history written
// by several lock holders, one pushing without a lock, with removals,
// re-additions and outputs. testSnapshot checks both against its random
// model too.
func testChanges(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name = "changes"

	web := resource("aws_instance", "web")
	// Keys whose byte order ("B" < "a") differs from a locale's.
	a := instance(t, web, strKey("a"), `{"id":"a"}`)
	b := instance(t, web, strKey("B"), `{"id":"b"}`)
	c := instance(t, web, intKey(0), `{"id":"c"}`)
	d := instance(t, web, intKey(1), `{"id":"d"}`)
	a2 := instance(t, web, strKey("a"), `{"id":"a","v":2}`)
	c2 := instance(t, web, intKey(0), `{"id":"c","v":2}`)
	b3 := instance(t, web, strKey("B"), `{"id":"b","v":3}`)
	x1, x2 := output("x", "1", false), output("x", "2", false)
	y1, z1 := output("y", "1", true), output("Z", "1", false)

	_, err := s.ChangesSince(ctx, name, 0)
	errorIs(t, err, kilolock.ErrNotFound)
	_, _, err = s.HashesAt(ctx, name, 1, []string{a.ID()}, nil)
	errorIs(t, err, kilolock.ErrNotFound)
	if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ChangesSince(ctx, name, 0); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ChangesSince of a state without versions = %v, %v; want an empty list", got, err)
	}
	for _, n := range []int64{0, 1} {
		_, _, err := s.HashesAt(ctx, name, n, []string{a.ID()}, nil)
		errorIs(t, err, kilolock.ErrNotFound)
	}

	// v1, pushed without a lock: a, b, c; outputs x and y.
	v := next(t, s, name)
	v.Version.Actor = "pusher"
	v.Upserts = []graph.Instance{a, b, c}
	v.OutputUpserts = []graph.Output{x1, y1}
	commit(t, s, name, v)
	lock(t, s, name, "l-1", kilolock.LockOptimistic)
	lock(t, s, name, "l-2", kilolock.LockOptimistic)
	// v2 under l-1: a changes, b goes, d comes, x changes; c is upserted
	// unchanged, which is no change.
	v = next(t, s, name)
	v.LockID, v.Version.Actor = "l-1", "alice"
	v.Upserts = []graph.Instance{a2, d, c}
	v.Removed = []string{b.ID()}
	v.OutputUpserts = []graph.Output{x2}
	commit(t, s, name, v)
	// v3 under l-2: c changes, y goes, Z comes.
	v = next(t, s, name)
	v.LockID, v.Version.Actor = "l-2", "bob"
	v.Upserts = []graph.Instance{c2}
	v.OutputUpserts = []graph.Output{z1}
	v.OutputsRemoved = []string{"y"}
	commit(t, s, name, v)
	// v4 under l-1 again: b comes back (another object), a goes.
	v = next(t, s, name)
	v.LockID, v.Version.Actor = "l-1", "alice"
	v.Upserts = []graph.Instance{b3}
	v.Removed = []string{a.ID()}
	commit(t, s, name, v)
	// v5, pushed again, changes nothing.
	v = next(t, s, name)
	v.Version.Actor = "pusher"
	v.Upserts = []graph.Instance{b3}
	commit(t, s, name, v)

	rec := func(version int64, lockID, actor string, output bool, id string) kilolock.ChangeRecord {
		return kilolock.ChangeRecord{Version: version, LockID: lockID, Actor: actor, Output: output, ID: id}
	}
	// By version, instances before outputs, IDs in byte order.
	all := []kilolock.ChangeRecord{
		rec(1, "", "pusher", false, b.ID()), // aws_instance.web["B"]
		rec(1, "", "pusher", false, a.ID()), // aws_instance.web["a"]
		rec(1, "", "pusher", false, c.ID()), // aws_instance.web[0]
		rec(1, "", "pusher", true, "x"),
		rec(1, "", "pusher", true, "y"),
		rec(2, "l-1", "alice", false, b.ID()),
		rec(2, "l-1", "alice", false, a.ID()),
		rec(2, "l-1", "alice", false, d.ID()), // aws_instance.web[1]
		rec(2, "l-1", "alice", true, "x"),
		rec(3, "l-2", "bob", false, c.ID()),
		rec(3, "l-2", "bob", true, "Z"),
		rec(3, "l-2", "bob", true, "y"),
		rec(4, "l-1", "alice", false, b.ID()),
		rec(4, "l-1", "alice", false, a.ID()),
	}
	for _, tt := range []struct {
		after int64
		want  []kilolock.ChangeRecord
	}{
		{-1, all},
		{0, all},
		{1, all[5:]},
		{2, all[9:]},
		{3, all[12:]},
		{4, nil}, // v5 changed nothing
		{5, nil}, // the current version
		{99, nil},
	} {
		got, err := s.ChangesSince(ctx, name, tt.after)
		if err != nil {
			t.Fatalf("ChangesSince(%d): %v", tt.after, err)
		}
		if got == nil {
			t.Errorf("ChangesSince(%d) = nil, want an empty list", tt.after)
		}
		if diff := cmp.Diff(tt.want, got, cmpOpts...); diff != "" {
			t.Errorf("ChangesSince(%d) (-want +got):\n%s", tt.after, diff)
		}
	}

	ids := []string{a.ID(), b.ID(), c.ID(), d.ID(), "aws_instance.never[0]", a.ID()}
	outs := []string{"x", "y", "Z", "never"}
	type hashes = map[string]graph.Hash
	for _, tt := range []struct {
		number             int64
		instances, outputs hashes
	}{
		{1, hashes{a.ID(): a.Hash, b.ID(): b.Hash, c.ID(): c.Hash}, hashes{"x": x1.Hash, "y": y1.Hash}},
		{2, hashes{a.ID(): a2.Hash, c.ID(): c.Hash, d.ID(): d.Hash}, hashes{"x": x2.Hash, "y": y1.Hash}},
		{3, hashes{a.ID(): a2.Hash, c.ID(): c2.Hash, d.ID(): d.Hash}, hashes{"x": x2.Hash, "Z": z1.Hash}},
		{4, hashes{b.ID(): b3.Hash, c.ID(): c2.Hash, d.ID(): d.Hash}, hashes{"x": x2.Hash, "Z": z1.Hash}},
		{5, hashes{b.ID(): b3.Hash, c.ID(): c2.Hash, d.ID(): d.Hash}, hashes{"x": x2.Hash, "Z": z1.Hash}},
	} {
		gotInstances, gotOutputs, err := s.HashesAt(ctx, name, tt.number, ids, outs)
		if err != nil {
			t.Fatalf("HashesAt(%d): %v", tt.number, err)
		}
		if diff := cmp.Diff(tt.instances, gotInstances); diff != "" {
			t.Errorf("HashesAt(%d) instances (-want +got):\n%s", tt.number, diff)
		}
		if diff := cmp.Diff(tt.outputs, gotOutputs); diff != "" {
			t.Errorf("HashesAt(%d) outputs (-want +got):\n%s", tt.number, diff)
		}
	}
	gotInstances, gotOutputs, err := s.HashesAt(ctx, name, 3, nil, nil)
	if err != nil || gotInstances == nil || gotOutputs == nil || len(gotInstances)+len(gotOutputs) != 0 {
		t.Errorf("HashesAt(3) of no keys = %v, %v, %v; want empty maps", gotInstances, gotOutputs, err)
	}
	for _, n := range []int64{0, -1, 6} {
		_, _, err := s.HashesAt(ctx, name, n, ids, outs)
		errorIs(t, err, kilolock.ErrNotFound)
	}
	// Another state's history is not this one's.
	other := next(t, s, "changes-other")
	other.Upserts = []graph.Instance{a2}
	commit(t, s, "changes-other", other)
	if got, err := s.ChangesSince(ctx, "changes-other", 0); err != nil || len(got) != 1 || got[0].ID != a.ID() {
		t.Errorf("ChangesSince of another state = %v, %v; want its one change", got, err)
	}
}

// checkChanges checks ChangesSince and HashesAt of state name against the
// models of its versions, in order (all of them, or those retention kept):
// a version changed a key iff the key's hash, or its presence, differs
// from the version before it.
func checkChanges(t *testing.T, s kilolock.Store, name string, history []model) {
	t.Helper()
	ctx := context.Background()
	var all []kilolock.ChangeRecord
	prev := model{}
	ids, outs := map[string]bool{"aws_instance.never[7]": true}, map[string]bool{"never": true}
	for _, m := range history {
		v := m.version
		var changed []kilolock.ChangeRecord
		for _, c := range []struct {
			output      bool
			before, now map[string]graph.Hash
		}{
			{false, instanceHashes(prev.instances), instanceHashes(m.instances)},
			{true, outputHashes(prev.outputs), outputHashes(m.outputs)},
		} {
			for _, k := range slices.Sorted(maps.Keys(union(c.before, c.now))) {
				if c.output {
					outs[k] = true
				} else {
					ids[k] = true
				}
				h0, ok0 := c.before[k]
				h1, ok1 := c.now[k]
				if ok0 != ok1 || h0 != h1 {
					changed = append(changed, kilolock.ChangeRecord{Version: v.Number, LockID: v.LockID, Actor: v.Actor, Output: c.output, ID: k})
				}
			}
		}
		all = append(all, changed...)
		prev = m
	}
	for after := int64(0); after <= history[len(history)-1].version.Number; after++ {
		got, err := s.ChangesSince(ctx, name, after)
		if err != nil {
			t.Fatalf("ChangesSince(%d): %v", after, err)
		}
		i := 0
		for i < len(all) && all[i].Version <= after {
			i++
		}
		if diff := cmp.Diff(all[i:], got, cmpOpts...); diff != "" {
			t.Errorf("ChangesSince(%d) (-want +got):\n%s", after, diff)
		}
	}

	idList, outList := slices.Sorted(maps.Keys(ids)), slices.Sorted(maps.Keys(outs))
	for _, m := range history {
		gotInstances, gotOutputs, err := s.HashesAt(ctx, name, m.version.Number, idList, outList)
		if err != nil {
			t.Fatalf("HashesAt(%d): %v", m.version.Number, err)
		}
		if diff := cmp.Diff(instanceHashes(m.instances), gotInstances); diff != "" {
			t.Errorf("HashesAt(%d) instances (-want +got):\n%s", m.version.Number, diff)
		}
		if diff := cmp.Diff(outputHashes(m.outputs), gotOutputs); diff != "" {
			t.Errorf("HashesAt(%d) outputs (-want +got):\n%s", m.version.Number, diff)
		}
	}
}

func instanceHashes(m map[string]graph.Instance) map[string]graph.Hash {
	out := make(map[string]graph.Hash, len(m))
	for id, in := range m {
		out[id] = in.Hash
	}
	return out
}

func outputHashes(m map[string]graph.Output) map[string]graph.Hash {
	out := make(map[string]graph.Hash, len(m))
	for name, o := range m {
		out[name] = o.Hash
	}
	return out
}

func union(a, b map[string]graph.Hash) map[string]graph.Hash {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

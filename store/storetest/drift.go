package storetest

import (
	"context"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/graph"
)

// testDrift: a check's records stay open until a later check of their
// instance finds it clean or a later version changes it; the view
// resource_drift shows the open ones.
func testDrift(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	ds, ok := s.(drift.DriftStore)
	if !ok {
		t.Skip("the store keeps no drift checks")
	}
	a := instance(t, resource("time_rotating", "a"), intKey(0), `{"id":"a"}`)
	b := instance(t, resource("time_rotating", "b"), intKey(0), `{"id":"b"}`)
	c := instance(t, resource("time_rotating", "c"), intKey(0), `{"id":"c"}`)
	v1 := next(t, s, "s")
	v1.Upserts = append(v1.Upserts, a, b, c)
	commit(t, s, "s", v1)
	commit(t, s, "other", next(t, s, "other"))

	if counts, err := ds.DriftCounts(ctx, nil); err != nil || len(counts) != 0 {
		t.Fatalf("DriftCounts before any check = %v, %v; want none", counts, err)
	}
	check := &drift.DriftCheck{Version: 1, Actor: "alice", Drifted: []drift.DriftRecord{
		{InstanceID: a.ID(), Address: a.Address(), Type: "time_rotating", Kind: drift.DriftChanged,
			Changes: []drift.DriftChange{{Path: "id", Kind: "changed", Recorded: "a", Real: graph.SensitiveMask}}},
		{InstanceID: b.ID(), Address: b.Address(), Type: "time_rotating", Kind: drift.DriftDeleted, Changes: []drift.DriftChange{}},
	}}
	must(t, ds.RecordDrift(ctx, "s", check))
	if check.ID == 0 || check.Drifted[0].Check != check.ID || check.Drifted[0].Actor != "alice" {
		t.Fatalf("RecordDrift set %+v", check)
	}
	open2 := func(want ...string) {
		t.Helper()
		got, err := ds.Drift(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		var addrs []string
		for _, d := range got {
			addrs = append(addrs, d.Address)
		}
		if len(addrs) != len(want) {
			t.Fatalf("open drift %v, want %v", addrs, want)
		}
		for i := range want {
			if addrs[i] != want[i] {
				t.Fatalf("open drift %v, want %v", addrs, want)
			}
		}
		res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT address FROM resource_drift WHERE state = 's' ORDER BY address`)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(want) {
			t.Fatalf("resource_drift holds %v, want %v", res.Rows, want)
		}
		counts, err := ds.DriftCounts(ctx, []string{"s", "other"})
		if err != nil || len(counts) != 1 || counts["s"] != len(want) {
			t.Fatalf("DriftCounts = %v, %v; want s: %d and no other (never checked)", counts, err, len(want))
		}
	}
	open2(a.Address(), b.Address())
	got, _ := ds.Drift(ctx, "s")
	if ch := got[0].Changes; len(ch) != 1 || ch[0].Recorded != "a" || ch[0].Real != graph.SensitiveMask || got[0].Version != 1 || got[1].Kind != drift.DriftDeleted {
		t.Errorf("records read back: %+v", got)
	}
	// A check of a alone that finds it clean closes a, not b.
	must(t, ds.RecordDrift(ctx, "s", &drift.DriftCheck{Version: 1, Actor: "bob", Scope: []string{a.ID()}}))
	open2(b.Address())
	// A later version that changes b closes it; one that changes c alone
	// does not.
	v2 := next(t, s, "s")
	v2.Upserts = append(v2.Upserts, instance(t, resource("time_rotating", "c"), intKey(0), `{"id":"c2"}`))
	commit(t, s, "s", v2)
	open2(b.Address())
	v3 := next(t, s, "s")
	v3.Removed = []string{b.ID()}
	commit(t, s, "s", v3)
	open2()

	errorIs(t, ds.RecordDrift(ctx, "s", &drift.DriftCheck{Version: 9}), kilolock.ErrNotFound)
	errorIs(t, ds.RecordDrift(ctx, "missing", &drift.DriftCheck{Version: 1}), kilolock.ErrNotFound)
	_, err := ds.Drift(ctx, "missing")
	errorIs(t, err, kilolock.ErrNotFound)
	// A full check closes everything open before it.
	must(t, ds.RecordDrift(ctx, "s", &drift.DriftCheck{Version: 3, Drifted: []drift.DriftRecord{
		{InstanceID: c.ID(), Address: c.Address(), Type: "time_rotating", Kind: drift.DriftDeleted, Changes: []drift.DriftChange{}}}}))
	open2(c.Address())
	must(t, ds.RecordDrift(ctx, "s", &drift.DriftCheck{Version: 3}))
	open2()
}

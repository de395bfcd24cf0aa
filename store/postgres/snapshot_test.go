package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// model is what one version should hold.
type model struct {
	instances map[string]kilolock.Instance
	outputs   map[string]kilolock.Output
	checks    []byte
	raw       []byte
	added     int
	changed   int
	removed   int
}

// TestSnapshotEveryVersion writes random commits (adds, changes, no-op
// upserts, removals of present and absent objects, outputs, check results,
// raw documents) against a simple model, then loads every version.
func TestSnapshotEveryVersion(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	cur := model{instances: map[string]kilolock.Instance{}, outputs: map[string]kilolock.Output{}}
	var want []model
	keys := []any{nil, 0, 1, "a", "b c"}
	for n := range int64(30) {
		next := model{instances: maps(cur.instances), outputs: maps(cur.outputs)}
		c := commit(n)
		for range rng.IntN(6) {
			name := fmt.Sprint("r", rng.IntN(5))
			key := keys[rng.IntN(len(keys))]
			in := instance(t, name, key, fmt.Sprint(rng.IntN(3)), "terraform_data.r0")
			if rng.IntN(6) == 0 {
				// The deposed key lives in the object.
				key := fmt.Sprintf("%08x", rng.IntN(3))
				obj := bytes.Replace(in.Object, []byte(`{`), []byte(`{"deposed":"`+key+`",`), 1)
				var err error
				if in, err = graph.NewInstance(in.Resource, obj); err != nil {
					t.Fatal(err)
				}
			}
			c.Upserts = append(c.Upserts, in)
		}
		// Effective upserts: the last per ID.
		last := map[string]kilolock.Instance{}
		for _, in := range c.Upserts {
			last[in.ID()] = in
		}
		for id, in := range last {
			old, ok := next.instances[id]
			switch {
			case !ok:
				next.added++
			case old.Hash != in.Hash:
				next.changed++
			}
			next.instances[id] = in
		}
		for range rng.IntN(3) {
			ids := append(sortedKeys(cur.instances), "terraform_data.absent")
			id := ids[rng.IntN(len(ids))]
			c.Removed = append(c.Removed, id)
			if _, up := last[id]; up {
				continue
			}
			if _, ok := next.instances[id]; ok {
				delete(next.instances, id)
				next.removed++
			}
		}
		if rng.IntN(2) == 0 {
			o := output(fmt.Sprint("o", rng.IntN(3)), fmt.Sprint(rng.IntN(2)), rng.IntN(2) == 0)
			c.OutputUpserts = append(c.OutputUpserts, o)
			next.outputs[o.Name] = o
		}
		if rng.IntN(4) == 0 {
			name := fmt.Sprint("o", rng.IntN(3))
			c.OutputsRemoved = append(c.OutputsRemoved, name)
			// An output upserted in the same commit stays: the upsert wins.
			if len(c.OutputUpserts) == 0 || c.OutputUpserts[0].Name != name {
				delete(next.outputs, name)
			}
		}
		if rng.IntN(2) == 0 {
			c.CheckResults = fmt.Appendf(nil, `[{"n":%d}]`, n)
		}
		next.checks = c.CheckResults
		if rng.IntN(3) == 0 {
			c.Raw = fmt.Appendf(nil, "\x1f\x8b raw %d", n)
		}
		next.raw = c.Raw
		v, _ := mustCommit(t, s, "snap", c)
		if v.Added != next.added || v.Changed != next.changed || v.Removed != next.removed || v.Instances != len(next.instances) {
			t.Fatalf("version %d counts %d/%d/%d of %d, want %d/%d/%d of %d", v.Number,
				v.Added, v.Changed, v.Removed, v.Instances, next.added, next.changed, next.removed, len(next.instances))
		}
		want = append(want, next)
		cur = next
	}

	history, err := s.History(ctx, "snap", kilolock.HistoryOptions{Limit: 1000})
	if err != nil || len(history) != len(want) {
		t.Fatalf("history: %d versions, %v", len(history), err)
	}
	for i, m := range want {
		number := int64(i + 1)
		snap, err := s.Snapshot(ctx, "snap", number)
		if err != nil {
			t.Fatalf("snapshot %d: %v", number, err)
		}
		if snap.Version != history[len(history)-1-i] {
			t.Errorf("snapshot %d version %+v, history says %+v", number, snap.Version, history[len(history)-1-i])
		}
		ids := sortedKeys(m.instances)
		var got []string
		for _, in := range snap.Instances {
			got = append(got, in.ID())
			w := m.instances[in.ID()]
			if in.Hash != w.Hash || !bytes.Equal(in.Object, w.Object) || in.Resource != w.Resource || in.Key != w.Key ||
				in.Deposed != w.Deposed || !slices.Equal(in.Dependencies, w.Dependencies) {
				t.Errorf("snapshot %d: instance %s = %+v, want %+v", number, in.ID(), in, w)
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("snapshot %d: instances %v, want %v", number, got, ids)
		}
		var outs []string
		for _, o := range snap.Outputs {
			outs = append(outs, o.Name)
			if w := m.outputs[o.Name]; w.Hash != o.Hash || !bytes.Equal(w.Object, o.Object) {
				t.Errorf("snapshot %d: output %s = %s, want %s", number, o.Name, o.Object, w.Object)
			}
		}
		if !slices.Equal(outs, sortedKeys(m.outputs)) {
			t.Errorf("snapshot %d: outputs %v, want %v", number, outs, sortedKeys(m.outputs))
		}
		if !bytes.Equal(snap.CheckResults, m.checks) || (snap.CheckResults == nil) != (m.checks == nil) {
			t.Errorf("snapshot %d: check results %s, want %s", number, snap.CheckResults, m.checks)
		}
		if !bytes.Equal(snap.Raw, m.raw) || (snap.Raw == nil) != (m.raw == nil) {
			t.Errorf("snapshot %d: raw %q, want %q", number, snap.Raw, m.raw)
		}
	}

	if _, err := s.Snapshot(ctx, "snap", 31); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("snapshot of a future version: %v", err)
	}
	if _, err := s.Snapshot(ctx, "nope", 1); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("snapshot of a missing state: %v", err)
	}
	page, err := s.History(ctx, "snap", kilolock.HistoryOptions{Limit: 5, Before: 10})
	if err != nil || len(page) != 5 || page[0].Number != 9 || page[4].Number != 5 {
		t.Errorf("history page: %v %v", page, err)
	}
}

func maps[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

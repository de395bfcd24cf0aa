package kilolock

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// respelled is in with its object's keys sorted: another spelling of the
// same meaning.
func respelled(t *testing.T, in graph.Instance) graph.Instance {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(in.Object))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	obj, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := graph.NewInstance(in.Resource, obj)
	if err != nil {
		t.Fatal(err)
	}
	if out.Hash == in.Hash {
		t.Fatalf("%s: sorting its keys changed nothing", in.ID())
	}
	return out
}

// TestDiffWalkIsByID: diffInto gives the same changes whether it walks two
// states in Terraform's order side by side or, for a state out of order,
// goes through an index: random removals, additions, changes and
// respellings, over many rounds.
func TestDiffWalkIsByID(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	base, err := graph.Parse(graphtest.Generate(300, 200, graph.FormatIndent))
	if err != nil {
		t.Fatal(err)
	}
	extra, err := graph.Parse(graphtest.Generate(340, 200, graph.FormatCompact))
	if err != nil {
		t.Fatal(err)
	}
	inBase := map[string]bool{}
	for i := range base.Instances {
		inBase[base.Instances[i].ID()] = true
	}
	var total Version
	respells := 0
	for round := range 200 {
		prev := &graph.State{Version: 4, Lineage: "l", Serial: 1}
		next := &graph.State{Version: 4, Lineage: "l", Serial: 2}
		for i := range base.Instances {
			in := base.Instances[i]
			if rng.IntN(10) > 0 {
				prev.Instances = append(prev.Instances, in)
			}
			switch rng.IntN(12) {
			case 0: // removed (or never there)
				continue
			case 1: // the same address, other attributes
				changed, err := graph.NewInstance(in.Resource, bytes.Replace(in.Object, []byte(`"id":"`), []byte(`"id":"x`), 1))
				if err != nil {
					t.Fatal(err)
				}
				in = changed
			case 2:
				in = respelled(t, in)
			}
			next.Instances = append(next.Instances, in)
		}
		for _, in := range extra.Instances {
			if !inBase[in.ID()] && rng.IntN(3) == 0 {
				next.Instances = append(next.Instances, in)
			}
		}
		next.Sort()
		if !sorted(prev) || !sorted(next) {
			t.Fatal("the states are not in Terraform's order")
		}
		var walked, indexed Commit
		heldW, _ := diffInto(&walked, prev, next)
		shuffled := *next
		shuffled.Instances = slices.Clone(next.Instances)
		rng.Shuffle(len(shuffled.Instances), func(i, j int) {
			shuffled.Instances[i], shuffled.Instances[j] = shuffled.Instances[j], shuffled.Instances[i]
		})
		heldI, _ := diffInto(&indexed, prev, &shuffled)
		if w, x := walked.Version, indexed.Version; w.Added != x.Added || w.Changed != x.Changed || w.Removed != x.Removed {
			t.Fatalf("round %d: walk +%d ~%d -%d, index +%d ~%d -%d", round, w.Added, w.Changed, w.Removed, x.Added, x.Changed, x.Removed)
		}
		if !slices.Equal(walked.Removed, indexed.Removed) {
			t.Fatalf("round %d: removed %v by walk, %v by index", round, walked.Removed, indexed.Removed)
		}
		if a, b := upsertIDs(walked.Upserts), upsertIDs(indexed.Upserts); !slices.Equal(a, b) {
			t.Fatalf("round %d: upserts %v by walk, %v by index", round, a, b)
		}
		total.Added += walked.Version.Added
		total.Changed += walked.Version.Changed
		total.Removed += walked.Version.Removed
		if heldW != next {
			respells++
		}
		held := map[string]graph.Hash{}
		for _, in := range heldI.Instances {
			held[in.ID()] = in.Hash
		}
		for _, in := range heldW.Instances {
			if held[in.ID()] != in.Hash {
				t.Fatalf("round %d: %s is held with other bytes by walk and by index", round, in.ID())
			}
		}
	}
	if total.Added == 0 || total.Changed == 0 || total.Removed == 0 || respells == 0 {
		t.Errorf("the rounds did not try every kind of change: +%d ~%d -%d, %d with respellings", total.Added, total.Changed, total.Removed, respells)
	}
}

func upsertIDs(ins []graph.Instance) []string {
	ids := make([]string, len(ins))
	for i := range ins {
		ids[i] = ins[i].ID()
	}
	slices.Sort(ids)
	return ids
}

package merge

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock/graph"
)

func TestResolve(t *testing.T) {
	h := func(b byte) Value { return Value{Present: true, Hash: graph.Hash{b}} }
	a, b, c, d := Key{ID: "a"}, Key{ID: "b"}, Key{ID: "c"}, Key{Output: true, ID: "d"}
	bob := Writer{Version: 7, LockID: "L2", Actor: "bob"}
	tests := []struct {
		name          string
		change        []Key
		others        map[Key]Writer
		atBase, in    map[Key]Value
		keep          []Key
		conflictsOn   []Key
		conflictActor string
	}{
		{name: "disjoint", change: []Key{a, d}, others: map[Key]Writer{b: bob}, keep: []Key{a, d}},
		{name: "stale copy of their change", change: []Key{a, b}, others: map[Key]Writer{b: bob},
			atBase: map[Key]Value{b: h(1)}, in: map[Key]Value{b: h(1)}, keep: []Key{a}},
		{name: "stale copy of their addition", change: []Key{c}, others: map[Key]Writer{c: bob}, keep: nil},
		{name: "both changed", change: []Key{a, b}, others: map[Key]Writer{b: bob},
			atBase: map[Key]Value{b: h(1)}, in: map[Key]Value{b: h(2)}, keep: []Key{a}, conflictsOn: []Key{b}, conflictActor: "bob"},
		{name: "they changed, we deleted", change: []Key{b}, others: map[Key]Writer{b: bob},
			atBase: map[Key]Value{b: h(1)}, in: map[Key]Value{}, conflictsOn: []Key{b}, conflictActor: "bob"},
		{name: "both added differently", change: []Key{c, d}, others: map[Key]Writer{c: bob, d: bob},
			in: map[Key]Value{c: h(3), d: h(4)}, conflictsOn: []Key{c, d}, conflictActor: "bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, conflicts := Resolve(tt.change, tt.others, tt.atBase, tt.in)
			if diff := cmp.Diff(tt.keep, keep); diff != "" {
				t.Errorf("keep (-want +got):\n%s", diff)
			}
			var on []Key
			for _, c := range conflicts {
				on = append(on, c.Key)
				if c.Winner.Actor != tt.conflictActor {
					t.Errorf("winner of %v = %+v, want %s", c.Key, c.Winner, tt.conflictActor)
				}
			}
			if diff := cmp.Diff(tt.conflictsOn, on); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyString(t *testing.T) {
	if got := (Key{ID: `module.a["x"].terraform_data.b[0]`}).String(); got != `module.a["x"].terraform_data.b[0]` {
		t.Errorf("instance key = %s", got)
	}
	if got := (Key{Output: true, ID: "url"}).String(); got != "output.url" {
		t.Errorf("output key = %s", got)
	}
}

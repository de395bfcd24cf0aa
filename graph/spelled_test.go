package graph_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// spelledOf is what a store keeps of st's lean instances by spelling.
func spelledOf(st *graph.State) map[graph.Hash]graph.Spelled {
	m := map[graph.Hash]graph.Spelled{}
	for i := range st.Instances {
		in := &st.Instances[i]
		if sp, ok := in.Spelling(); ok {
			m[sp] = graph.Spelled{Hash: in.Hash, Canonical: in.CanonicalHash()}
		}
	}
	return m
}

// TestParseSpelled: a lean parse with no Prev but the spellings a store
// kept of the last version (ParseOptions.Spelled) gives what a lean parse
// without them gives, instance for instance (header, key, status,
// dependencies, hashes, the object read back, the spelling), in both
// layouts; it takes each unchanged instance's hashes from Spelled (a
// wrong entry shows through), and learns the changed ones' spellings.
func TestParseSpelled(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(300, 200, f)
			first, err := graph.ParseWith(doc, graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			spelled := spelledOf(first)
			if len(spelled) != len(first.Instances) {
				t.Fatalf("%d of %d instances of a lean parse know their spelling", len(spelled), len(first.Instances))
			}
			changed := []int{0, 7, 299}
			next := graphtest.Change(doc, changed, f)
			got, err := graph.ParseWith(next, graph.ParseOptions{Lean: true, Spelled: spelled})
			if err != nil {
				t.Fatal(err)
			}
			want, err := graph.ParseWith(next, graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Instances) != len(want.Instances) || got.Serial != want.Serial || !got.RenderEqual(f, next) {
				t.Fatalf("%d instances, serial %d; want %d, %d, rendering the document", len(got.Instances), got.Serial, len(want.Instances), want.Serial)
			}
			for i := range got.Instances {
				in, w := &got.Instances[i], &want.Instances[i]
				sp, ok := in.Spelling()
				wsp, _ := w.Spelling()
				obj, err := in.ObjectFrom(bytes.NewReader(next))
				wobj, _ := w.ObjectFrom(bytes.NewReader(next))
				if in.ID() != w.ID() || in.Resource != w.Resource || in.Status != w.Status || !slices.Equal(in.Dependencies, w.Dependencies) ||
					in.Hash != w.Hash || in.CanonicalHash() != w.CanonicalHash() || !ok || sp != wsp || err != nil || !bytes.Equal(obj, wobj) || !in.IsLean() {
					t.Fatalf("%s: not as a lean parse without spellings gives it (object read back: %v)", in.ID(), err)
				}
				_, known := spelled[sp]
				if known == slices.Contains(changed, i) {
					t.Errorf("%s: spelling known %v, changed %v", in.ID(), known, slices.Contains(changed, i))
				}
			}

			// The parse trusts what the store kept: a wrong Hash kept for
			// instance 1's spelling is what it gets.
			sp, _ := first.Instances[1].Spelling()
			wrong := graph.Spelled{Hash: first.Instances[2].Hash, Canonical: first.Instances[2].CanonicalHash()}
			spelled[sp] = wrong
			got, err = graph.ParseWith(next, graph.ParseOptions{Lean: true, Spelled: spelled})
			if err != nil {
				t.Fatal(err)
			}
			if in := &got.Instances[1]; in.Hash != wrong.Hash || in.ID() != want.Instances[1].ID() {
				t.Errorf("%s: Hash %x, want the one kept for its spelling, %x", in.ID(), in.Hash[:4], wrong.Hash[:4])
			}
		})
	}
}

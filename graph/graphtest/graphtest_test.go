package graphtest_test

import (
	"bytes"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

func TestGenerate(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		doc := graphtest.Generate(500, 400, f)
		if !bytes.Equal(doc, graphtest.Generate(500, 400, f)) {
			t.Fatal("not deterministic")
		}
		st, err := graph.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Instances) != 500 || st.Format != f {
			t.Fatalf("%d instances, format %v", len(st.Instances), st.Format)
		}
		kinds, modules := map[graph.KeyKind]int{}, map[string]int{}
		for _, in := range st.Instances {
			kinds[in.Key.Kind]++
			modules[in.Resource.Module]++
			if n := len(in.Object); n < 300 || n > 600 {
				t.Errorf("%s: object of %d bytes", in.ID(), n)
			}
		}
		if len(kinds) != 3 || len(modules) < 5 {
			t.Errorf("key kinds %v, modules %v", kinds, modules)
		}
		// It is what the CLI writes: sorted, and rendered back exactly.
		if !bytes.Equal(st.Render(f), doc) {
			t.Error("Render differs from Generate")
		}
		sorted := *st
		sorted.Instances = append([]graph.Instance(nil), st.Instances...)
		sorted.Sort()
		if !bytes.Equal(sorted.Render(f), doc) {
			t.Error("not in Terraform's order")
		}
	}
}

func TestChange(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		doc := graphtest.Generate(100, 200, f)
		next := graphtest.Change(doc, []int{3, 50}, f)
		again := graphtest.Change(next, []int{3}, f)
		a, _ := graph.Parse(doc)
		b, err := graph.Parse(next)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := graph.Parse(again)
		if b.Serial != a.Serial+1 || c.Serial != b.Serial+1 {
			t.Errorf("serials %d %d %d", a.Serial, b.Serial, c.Serial)
		}
		d := graph.Diff(a, b)
		want := []string{a.Instances[3].ID(), a.Instances[50].ID()}
		if len(d.Changed) != 2 || len(d.Added)+len(d.Removed) != 0 || !(d.Changed[0] == want[0] && d.Changed[1] == want[1] || d.Changed[0] == want[1] && d.Changed[1] == want[0]) {
			t.Errorf("Diff = %+v, want %q changed", d, want)
		}
		if d := graph.Diff(b, c); len(d.Changed) != 1 {
			t.Errorf("changing again: %+v", d)
		}
		// Other layout out of the same change.
		other := graphtest.Change(doc, []int{3, 50}, 1-f)
		o, err := graph.Parse(other)
		if err != nil || !graph.Diff(b, o).Empty() || o.Format != 1-f {
			t.Errorf("other layout: %v %+v", err, graph.Diff(b, o))
		}
	}
}

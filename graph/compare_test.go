package graph_test

import (
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestInstanceCompare: Compare orders instances as Sort does and is 0
// exactly for one ID.
func TestInstanceCompare(t *testing.T) {
	st, err := graph.Parse(graphtest.Generate(200, 200, graph.FormatIndent))
	if err != nil {
		t.Fatal(err)
	}
	deposed := st.Instances[5]
	deposed.Deposed = "00000001"
	for i := range st.Instances {
		a := &st.Instances[i]
		if a.Compare(a) != 0 {
			t.Fatalf("%s: Compare with itself is not 0", a.ID())
		}
		if i > 0 {
			b := &st.Instances[i-1]
			if b.Compare(a) >= 0 || a.Compare(b) <= 0 {
				t.Fatalf("%s and %s: not in Sort's order by Compare", b.ID(), a.ID())
			}
		}
	}
	if c := st.Instances[5].Compare(&deposed); c >= 0 {
		t.Errorf("a current object compares %d with its deposed one, want < 0", c)
	}
}

package graphtest_test

import (
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// changedInstances returns the positions of the instances whose objects
// differ between a and b, which must hold the same addresses.
func changedInstances(t *testing.T, a, b []byte) []int {
	t.Helper()
	sa, err := graph.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := graph.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(sa.Instances) != len(sb.Instances) {
		t.Fatalf("%d instances, then %d", len(sa.Instances), len(sb.Instances))
	}
	var changed []int
	for i := range sa.Instances {
		if sa.Instances[i].ID() != sb.Instances[i].ID() {
			t.Fatalf("instance %d is %s, then %s", i, sa.Instances[i].ID(), sb.Instances[i].ID())
		}
		if sa.Instances[i].Hash != sb.Instances[i].Hash {
			changed = append(changed, i)
		}
	}
	if sb.Serial != sa.Serial+1 {
		t.Errorf("serial %d, then %d", sa.Serial, sb.Serial)
	}
	return changed
}

func TestSeries(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		testSeries(t, f)
	}
}

// testSeries is TestSeries on a document in format f.
func testSeries(t *testing.T, f graph.Format) {
	doc := graphtest.Generate(500, 512, f)
	s, err := graphtest.NewSeries(doc)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 500 {
		t.Fatalf("Len = %d, want 500", s.Len())
	}
	prev := doc
	for range 5 {
		next := s.Next()
		if got := changedInstances(t, prev, next); len(got) != 2 {
			t.Errorf("Next changed instances %v, want 2", got)
		}
		st, _ := graph.Parse(next)
		if st.Format != f {
			t.Errorf("Next's document is in format %v, want %v", st.Format, f)
		}
		if st.Serial != s.Serial() {
			t.Errorf("Serial() = %d, the document says %d", s.Serial(), st.Serial)
		}
		prev = next
	}
	edited, err := s.Edit(prev, 7, 300)
	if err != nil {
		t.Fatal(err)
	}
	if got := changedInstances(t, prev, edited); len(got) != 2 || got[0] != 7 || got[1] != 300 {
		t.Errorf("Edit(7, 300) changed instances %v", got)
	}
	if _, err := s.Edit(graphtest.Generate(10, 512, f), 1); err == nil {
		t.Error("Edit of a document of another layout: no error")
	}
	if _, err := s.Edit(prev, 500); err == nil {
		t.Error("Edit of instance 500 of 500: no error")
	}
	if _, err := graphtest.NewSeries([]byte(`{"version": 4}`)); err == nil {
		t.Error("NewSeries of a document without serial: no error")
	}
}

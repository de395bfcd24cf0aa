package graph_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestDetach: a detached state renders the same bytes from its objects,
// no longer copies its fragments, and is still found again by ParseReusing,
// which gives what Parse gives.
func TestDetach(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(300, 400, f)
			st := parse(t, doc)
			st.Detach()
			for i := range st.Instances {
				if graph.Copyable(&st.Instances[i], f) {
					t.Fatalf("%s still copies its fragment after Detach", st.Instances[i].ID())
				}
			}
			if !bytes.Equal(st.Render(f), doc) {
				t.Fatal("a detached state renders other bytes")
			}
			next := graphtest.Change(doc, []int{5, 200}, f)
			got, n := checkReusing(t, next, st)
			if n != 298 {
				t.Errorf("reused %d instances of a detached state, want 298", n)
			}
			// And a chain: the next generation from a detached one.
			got.Detach()
			if _, n := checkReusing(t, graphtest.Change(next, []int{7}, f), got); n != 299 {
				t.Errorf("second generation reused %d, want 299", n)
			}
		})
	}
}

// TestRenderTo: RenderTo writes what Render returns, in pieces, and stops
// at the first error of its writer; RenderEqual compares without building.
func TestRenderTo(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(500, 600, f)
			st := parse(t, doc)
			var w countingWriter
			n, err := st.RenderTo(&w, f)
			if err != nil || n != int64(len(doc)) || !bytes.Equal(w.buf.Bytes(), doc) {
				t.Fatalf("RenderTo wrote %d bytes (%v), want the %d of the document", n, err, len(doc))
			}
			if w.writes < 5 {
				t.Errorf("RenderTo wrote %d bytes in %d writes: not in pieces", n, w.writes)
			}
			failing := &failAfter{left: 3}
			if n, err := st.RenderTo(failing, f); err != io.ErrShortWrite || failing.calls != 4 || n >= int64(len(doc)) {
				t.Errorf("RenderTo to a writer failing at its 4th write: %d bytes, %v, %d calls", n, err, failing.calls)
			}

			if !st.RenderEqual(f, doc) {
				t.Error("RenderEqual(the document) = false")
			}
			other := graphtest.Change(doc, []int{499}, f)
			for name, d := range map[string][]byte{
				"last instance changed": other,
				"shorter":               doc[:len(doc)-1],
				"longer":                append(bytes.Clone(doc), ' '),
				"empty":                 nil,
				"other layout":          st.Render(1 - f),
			} {
				if st.RenderEqual(f, d) {
					t.Errorf("RenderEqual(%s) = true", name)
				}
			}
		})
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.buf.Write(p)
}

type failAfter struct{ left, calls int }

func (w *failAfter) Write(p []byte) (int, error) {
	w.calls++
	if w.left == 0 {
		return 0, io.ErrShortWrite
	}
	w.left--
	return len(p), nil
}

// TestParseReusingLoadedState: a state loaded from a store (its instances
// rebuilt from resource and object, knowing no fragment) gives the next
// document's unchanged instances their objects: the result is Parse's and
// holds one copy of each unchanged object.
func TestParseReusingLoadedState(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(400, 300, f)
			parsed := parse(t, doc)
			loaded := &graph.State{Version: 4, Serial: parsed.Serial, Lineage: parsed.Lineage, Format: f}
			for i := range parsed.Instances {
				in, err := graph.NewInstance(parsed.Instances[i].Resource, bytes.Clone(parsed.Instances[i].Object))
				if err != nil {
					t.Fatal(err)
				}
				loaded.Instances = append(loaded.Instances, in)
			}
			next := graphtest.Change(doc, []int{3, 250}, f)
			got, n := checkReusing(t, next, loaded)
			if n != 398 {
				t.Errorf("took %d objects of the loaded state, want 398", n)
			}
			// Then the next generation finds them by fragment.
			got.Detach()
			if _, n := checkReusing(t, graphtest.Change(next, []int{9}, f), got); n != 399 {
				t.Errorf("next generation reused %d, want 399", n)
			}
		})
	}
}

package graph_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// leanOf parses doc and makes the result lean.
func leanOf(t *testing.T, doc []byte) *graph.State {
	t.Helper()
	st := parse(t, doc)
	st.Lean()
	return st
}

// TestLean: a lean state keeps what tells the next document's changes,
// not its objects: it does not render, and ParseWith of the next document
// with it as Prev takes every unchanged instance from it (lean, but for
// the fragment it renders from), parses the changed ones, and renders
// back the document; Equal tells a changed instance from a respelled one
// without the lean side's object. In both layouts, down a chain of
// versions.
func TestLean(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(400, 300, f)
			full := parse(t, doc)
			lean := leanOf(t, doc)
			if !lean.IsLean() || full.IsLean() {
				t.Fatalf("IsLean: %v for the lean state, %v for the parsed one", lean.IsLean(), full.IsLean())
			}
			for i := range lean.Instances {
				in, want := &lean.Instances[i], &full.Instances[i]
				if in.Object != nil || in.Hash != want.Hash || in.ID() != want.ID() || in.CanonicalHash() != want.CanonicalHash() {
					t.Fatalf("lean %s: object %d bytes, hash %v; want no object, %v and the same canonical hash", in.ID(), len(in.Object), in.Hash, want.Hash)
				}
			}
			if _, err := lean.RenderTo(io.Discard, f); !errors.Is(err, graph.ErrLean) {
				t.Errorf("RenderTo of a lean state: %v, want ErrLean", err)
			}
			if b := lean.Render(f); b != nil {
				t.Errorf("Render of a lean state: %d bytes, want nil", len(b))
			}

			prev := lean
			for gen, which := range [][]int{{3, 250}, {3}, {0, 1, 399}} {
				next := graphtest.Change(doc, which, f)
				got, err := graph.ParseWith(next, graph.ParseOptions{Prev: prev})
				if err != nil {
					t.Fatal(err)
				}
				want := parse(t, next)
				leanN := 0
				for i := range got.Instances {
					in, w := &got.Instances[i], &want.Instances[i]
					if in.ID() != w.ID() || in.Hash != w.Hash || in.Status != w.Status || !equalStrings(in.Dependencies, w.Dependencies) {
						t.Fatalf("generation %d: %s differs from Parse's", gen, in.ID())
					}
					if in.Object == nil {
						leanN++
					} else if !bytes.Equal(in.Object, w.Object) {
						t.Fatalf("generation %d: %s's object differs from Parse's", gen, in.ID())
					}
				}
				if leanN != len(got.Instances)-len(which) {
					t.Errorf("generation %d: %d instances taken from the lean state, want %d", gen, leanN, len(got.Instances)-len(which))
				}
				if !got.RenderEqual(f, next) {
					t.Fatalf("generation %d: the parse does not render back the document", gen)
				}
				for _, i := range which {
					if got.Instances[i].Equal(&prev.Instances[i]) || prev.Instances[i].Equal(&got.Instances[i]) {
						t.Errorf("generation %d: changed %s is Equal to the lean one", gen, got.Instances[i].ID())
					}
				}
				got.Lean()
				prev, doc = got, next
			}

			// A respelled document (encoding/json's sorted keys): every
			// instance differs in bytes, none in meaning.
			respelled := parse(t, graphtest.GoMap(t, doc))
			for i := range respelled.Instances {
				if r := &respelled.Instances[i]; r.Hash == prev.Instances[i].Hash || !r.Equal(&prev.Instances[i]) || !prev.Instances[i].Equal(r) {
					t.Fatalf("respelled %s: not Equal to the lean one by meaning", r.ID())
				}
			}
		})
	}
}

// TestRenderIndexTo: a state loaded without fragments (as from a store)
// rendered by RenderIndexTo writes what Render does and learns each
// instance's fragment, so that it can be made lean and the next document
// parsed against it takes every unchanged instance from it.
func TestRenderIndexTo(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(300, 200, f)
			loaded := parse(t, doc)
			for i := range loaded.Instances {
				in, err := graph.NewInstance(loaded.Instances[i].Resource, bytes.Clone(loaded.Instances[i].Object))
				if err != nil {
					t.Fatal(err)
				}
				loaded.Instances[i] = in
			}
			var buf bytes.Buffer
			if n, err := loaded.RenderIndexTo(&buf, f); err != nil || n != int64(len(doc)) || !bytes.Equal(buf.Bytes(), doc) {
				t.Fatalf("RenderIndexTo: %d bytes, %v; want the %d of the document", n, err, len(doc))
			}
			loaded.Lean()
			if !loaded.IsLean() {
				t.Fatal("not lean after RenderIndexTo and Lean")
			}
			next := graphtest.Change(doc, []int{7}, f)
			got, err := graph.ParseWith(next, graph.ParseOptions{Prev: loaded})
			if err != nil {
				t.Fatal(err)
			}
			taken := 0
			for i := range got.Instances {
				if got.Instances[i].Object == nil {
					taken++
				}
			}
			if taken != len(got.Instances)-1 || !got.RenderEqual(f, next) {
				t.Errorf("took %d of %d instances from the indexed state (want all but 1), renders back: %v", taken, len(got.Instances), got.RenderEqual(f, next))
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

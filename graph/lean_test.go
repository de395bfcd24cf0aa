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
			checkTakes(t, loaded, graphtest.Change(doc, []int{7}, f), 1, f)
		})
	}
}

// TestRenderLeanTo: a state whose objects are elsewhere (as a store
// streams them) renders from them one at a time what Render gives, and is
// left lean: the next document parsed against it takes every unchanged
// instance from it; an error of the objects' source stops it.
func TestRenderLeanTo(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(300, 200, f)
			full := parse(t, doc)
			st := parse(t, doc)
			objects := make([][]byte, len(st.Instances))
			for i := range st.Instances {
				in, err := graph.NewInstance(st.Instances[i].Resource, bytes.Clone(st.Instances[i].Object))
				if err != nil {
					t.Fatal(err)
				}
				objects[i], in.Object = in.Object, nil
				st.Instances[i] = in
			}
			var lent []byte
			var buf bytes.Buffer
			n, err := st.RenderLeanTo(&buf, f, func(i int) ([]byte, error) {
				// One buffer for all: valid only until the next call.
				lent = append(lent[:0], objects[i]...)
				return lent, nil
			})
			if err != nil || n != int64(len(doc)) || !bytes.Equal(buf.Bytes(), doc) {
				t.Fatalf("RenderLeanTo: %d bytes, %v; want the %d of the document", n, err, len(doc))
			}
			for i := range st.Instances {
				in := &st.Instances[i]
				if in.Object != nil || in.CanonicalHash() != full.Instances[i].CanonicalHash() {
					t.Fatalf("%s after RenderLeanTo: %d bytes of object, canonical hash %v; want none and %v", in.ID(), len(in.Object), in.CanonicalHash(), full.Instances[i].CanonicalHash())
				}
			}
			if !st.IsLean() {
				t.Fatal("not lean after RenderLeanTo")
			}
			checkTakes(t, st, graphtest.Change(doc, []int{9, 11}, f), 2, f)
			boom := errors.New("boom")
			if _, err := parse(t, doc).RenderLeanTo(io.Discard, f, func(i int) ([]byte, error) {
				if i == 100 {
					return nil, boom
				}
				return objects[i], nil
			}); !errors.Is(err, boom) {
				t.Errorf("RenderLeanTo with a failing source: %v, want its error", err)
			}
		})
	}
}

// TestParseLean: a lean parse keeps no objects of instances whose bytes
// are canonical: each reads its object back from the document
// (ObjectFrom), as Parse has it; the parse renders the document and takes
// the next one's unchanged instances as a lean state does. A document
// spaced as neither CLI writes keeps its objects. Objects read back from a
// document rendered by RenderIndexTo through a writer are the same.
func TestParseLean(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(400, 300, f)
			full := parse(t, doc)
			st, err := graph.ParseWith(doc, graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range st.Instances {
				in, want := &st.Instances[i], &full.Instances[i]
				obj, err := in.ObjectFrom(bytes.NewReader(doc))
				if in.Object != nil || err != nil || !bytes.Equal(obj, want.Object) || in.Hash != want.Hash || in.CanonicalHash() != want.CanonicalHash() {
					t.Fatalf("%s: Object %d bytes, read back %d bytes (%v); want none, and Parse's %d", in.ID(), len(in.Object), len(obj), err, len(want.Object))
				}
			}
			if !st.RenderEqual(f, doc) {
				t.Fatal("a lean parse does not render its document")
			}
			if _, err := st.Instances[0].ObjectFrom(bytes.NewReader(graphtest.Change(doc, []int{0}, f))); err == nil {
				t.Error("an object read back from another document was taken")
			}
			next := graphtest.Change(doc, []int{17}, f)
			got, err := graph.ParseWith(next, graph.ParseOptions{Prev: st, Lean: true})
			if err != nil || !got.RenderEqual(f, next) {
				t.Fatalf("the next document against the lean parse: %v", err)
			}
			if obj, err := got.Instances[17].ObjectFrom(bytes.NewReader(next)); err != nil || !bytes.Equal(obj, parse(t, next).Instances[17].Object) {
				t.Errorf("the changed instance read back: %v", err)
			}

			// Deeper indentation, or a space after each key: the
			// generated values hold neither a newline nor a '":'.
			spaced := bytes.ReplaceAll(doc, []byte("\n"), []byte("\n "))
			if f == graph.FormatCompact {
				spaced = bytes.ReplaceAll(doc, []byte(`":`), []byte(`": `))
			}
			kept, err := graph.ParseWith(spaced, graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range kept.Instances {
				if kept.Instances[i].Object == nil {
					t.Fatalf("%s of a document spaced as neither CLI writes has no object", kept.Instances[i].ID())
				}
			}

			want := parse(t, doc)
			var w countingWriter
			if _, err := full.RenderIndexTo(&w, f); err != nil || w.writes < 2 {
				t.Fatalf("RenderIndexTo: %v in %d writes; want several", err, w.writes)
			}
			full.Lean()
			for i := range full.Instances {
				obj, err := full.Instances[i].ObjectFrom(bytes.NewReader(w.buf.Bytes()))
				if err != nil || !bytes.Equal(obj, want.Instances[i].Object) {
					t.Fatalf("%s read back from its rendering through a writer: %v", full.Instances[i].ID(), err)
				}
			}
		})
	}
}

// checkTakes asserts that next, parsed against the lean state prev, takes
// from it every instance but the changed ones and renders back next.
func checkTakes(t *testing.T, prev *graph.State, next []byte, changed int, f graph.Format) {
	t.Helper()
	got, err := graph.ParseWith(next, graph.ParseOptions{Prev: prev})
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for i := range got.Instances {
		if got.Instances[i].Object == nil {
			taken++
		}
	}
	if taken != len(got.Instances)-changed || !got.RenderEqual(f, next) {
		t.Errorf("took %d of %d instances from the lean state (want all but %d), renders back: %v", taken, len(got.Instances), changed, got.RenderEqual(f, next))
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

// TestRenderEqualAt: RenderEqualAt compares the rendering with the bytes
// read from at, not from doc's memory (overwritten here after the parse,
// it changes nothing), skipping the instances parsed from doc where they
// stand; a document that differs in its layout or in an instance not
// parsed from it is told apart; a copy of the document, which nothing
// aliases, is compared byte for byte, and equal. With no at, the same
// holds of doc's own memory.
func TestRenderEqualAt(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			orig := graphtest.Generate(500, 400, f)
			doc := bytes.Clone(orig)
			st, err := graph.ParseWith(doc, graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range doc {
				doc[i] = 'x'
			}
			if !st.RenderEqualAt(f, doc, bytes.NewReader(orig)) {
				t.Fatal("RenderEqualAt: the parsed document does not render back")
			}
			// Its last byte, a newline, is layout.
			other := bytes.Clone(orig)
			other[len(other)-1] = ' '
			if st.RenderEqualAt(f, doc, bytes.NewReader(other)) {
				t.Error("RenderEqualAt: equal to a document with another last byte")
			}
			// Another document: nothing aliases it, so every byte is
			// compared.
			next := graphtest.Change(orig, []int{42}, f)
			if st.RenderEqualAt(f, next, bytes.NewReader(next)) {
				t.Error("RenderEqualAt: equal to a document with a changed instance")
			}
			fresh, err := graph.ParseWith(bytes.Clone(orig), graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			if !fresh.RenderEqualAt(f, bytes.Clone(orig), bytes.NewReader(orig)) {
				t.Error("RenderEqualAt: not equal to a copy of its document")
			}

			// With no at, doc's own memory is compared, in place.
			inPlace := bytes.Clone(orig)
			own, err := graph.ParseWith(inPlace, graph.ParseOptions{Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			if !own.RenderEqualAt(f, inPlace, nil) {
				t.Error("RenderEqualAt, in place: the parsed document does not render back")
			}
			last := len(inPlace) - 1
			inPlace[last] = ' '
			if own.RenderEqualAt(f, inPlace, nil) {
				t.Error("RenderEqualAt, in place: equal to a document with another last byte")
			}
			inPlace[last] = orig[last]
			if own.RenderEqualAt(f, next, nil) || !fresh.RenderEqualAt(f, bytes.Clone(orig), nil) {
				t.Error("RenderEqualAt, in place: a changed document equal, or a copy of its document not")
			}
		})
	}
}

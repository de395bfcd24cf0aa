package graph_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestPack: a state packed and unpacked is the state it was, fragments
// dropped (reflect.DeepEqual compares the unexported fields too): a lean
// one, a parsed one with its objects, and one with outputs, check results,
// deposed and tainted objects, string keys and dependencies; the unpacked
// lean state, as ParseWith's Prev, takes every unchanged instance of the
// next document as the packed one would; a packed state costs well under
// what the lean State's instances do.
func TestPack(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(500, 300, f)
			lean := leanOf(t, doc)
			full := parse(t, doc)
			full.Detach()
			for name, st := range map[string]*graph.State{"lean": lean, "parsed": full} {
				got, err := st.Pack().Unpack()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !reflect.DeepEqual(got, st) {
					t.Fatalf("%s: the unpacked state differs from the packed one", name)
				}
			}
			prev, err := lean.Pack().Unpack()
			if err != nil {
				t.Fatal(err)
			}
			checkTakes(t, prev, graphtest.Change(doc, []int{3, 400}, f), 2, f)
			if size, held := lean.Pack().Size(), len(lean.Instances)*int(reflect.TypeOf(graph.Instance{}).Size()); size > held/3 {
				t.Errorf("packed: %d bytes, over a third of the %d of the lean state's instances", size, held)
			}
		})
	}
	t.Run("fixture", func(t *testing.T) {
		doc := []byte(`{"version":4,"terraform_version":"1.10.10","serial":3,"lineage":"l","outputs":{"o":{"value":[1,"a"],"type":["tuple",["number","string"]],"sensitive":true}},"resources":[` +
			`{"module":"module.m[\"k\"]","mode":"managed","type":"t","name":"n","provider":"provider[\"p\"]","each":"map","instances":[` +
			`{"index_key":"x","status":"tainted","schema_version":0,"attributes":{"id":"1"},"sensitive_attributes":[],"dependencies":["t.a","t.b"]},` +
			`{"index_key":"x","deposed":"d1","schema_version":0,"attributes":{"id":"2"},"sensitive_attributes":[]}]}],` +
			`"check_results":[{"object_kind":"resource","config_addr":"t.n","status":"pass","objects":null}]}`)
		st := parse(t, doc)
		st.Detach()
		got, err := st.Pack().Unpack()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, st) || !bytes.Equal(got.Render(graph.FormatCompact), st.Render(graph.FormatCompact)) {
			t.Fatalf("unpacked: %+v\nwant %+v", got, st)
		}
	})
	t.Run("not packed", func(t *testing.T) {
		for _, b := range [][]byte{nil, {1}, {9, 0, 0, 0, 0}, bytes.Repeat([]byte{1}, 40)} {
			if _, err := graph.PackedBytes(b).Unpack(); err == nil {
				t.Errorf("Unpack(%v) = nil error", b)
			}
		}
		p := leanOf(t, graphtest.Generate(20, 100, graph.FormatIndent)).Pack()
		b := graph.PackedBytesOf(p)
		for _, cut := range []int{1, 10, len(b) / 2, len(b) - 5} {
			bad := append(append([]byte{}, b[:cut]...), b[len(b)-4:]...)
			if _, err := graph.PackedBytes(bad).Unpack(); err == nil {
				t.Errorf("cut at %d: Unpack = nil error", cut)
			}
		}
	})
}

// BenchmarkPack is what a cached write pays to pack the index it leaves
// (500 instances, the fleet benchmark's state) and to unpack it again for
// the next write.
func BenchmarkPack(b *testing.B) {
	st, err := graph.Parse(graphtest.Generate(500, 300, graph.FormatIndent))
	if err != nil {
		b.Fatal(err)
	}
	st.Lean()
	b.Run("pack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st.Pack()
		}
	})
	b.Run("unpack", func(b *testing.B) {
		p := st.Pack()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Unpack(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

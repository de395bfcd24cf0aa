package graph_test

import (
	"encoding/json"
	"io"
	"sync"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// The benchmark state: 10,000 instances of about 1 KB of attributes each,
// about 19 MB in Terraform's layout.
const (
	benchInstances = 10000
	benchAttrBytes = 1024
)

var benchDocs = sync.OnceValue(func() map[graph.Format][2][]byte {
	m := map[graph.Format][2][]byte{}
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		doc := graphtest.Generate(benchInstances, benchAttrBytes, f)
		m[f] = [2][]byte{doc, graphtest.Change(doc, []int{1234, 7777}, f)}
	}
	return m
})

// cpuPerOp reports the process CPU time per operation from now until the
// returned function runs: on a busy machine it is steadier than wall time,
// and it counts the garbage collector's work.
func cpuPerOp(b *testing.B) func() {
	start := processCPU()
	return func() {
		if used := processCPU() - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

func eachFormat(b *testing.B, run func(b *testing.B, f graph.Format, doc, changed []byte)) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		b.Run(f.String(), func(b *testing.B) {
			d := benchDocs()[f]
			b.SetBytes(int64(len(d[0])))
			b.ReportAllocs()
			run(b, f, d[0], d[1])
		})
	}
}

// BenchmarkFloorUnmarshal is the floor a POST is measured against:
// json.Unmarshal into a struct mirroring tfstate v4, attributes as
// json.RawMessage.
func BenchmarkFloorUnmarshal(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, _ []byte) {
		defer cpuPerOp(b)()
		for b.Loop() {
			var s graphtest.StateV4
			if err := json.Unmarshal(doc, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParse is a cold parse: every instance compacted and hashed.
func BenchmarkParse(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, _ []byte) {
		defer cpuPerOp(b)()
		for b.Loop() {
			if _, err := graph.Parse(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseReusing2Changes is the POST hot path: the previous version
// parsed, the next one with two instances changed.
func BenchmarkParseReusing2Changes(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, changed []byte) {
		prev, err := graph.Parse(doc)
		if err != nil {
			b.Fatal(err)
		}
		defer cpuPerOp(b)()
		for b.Loop() {
			if _, err := graph.ParseReusing(changed, prev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseLean2Changes is a write's parse of a version with two
// instances changed when the previous one is not in memory (a cache
// miss): lean, with nothing to reuse (full), and with the spellings a
// store kept of the previous version's instances (spelled).
func BenchmarkParseLean2Changes(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, changed []byte) {
		prev, err := graph.ParseWith(doc, graph.ParseOptions{Lean: true})
		if err != nil {
			b.Fatal(err)
		}
		spelled := spelledOf(prev)
		for _, c := range []struct {
			name    string
			spelled map[graph.Hash]graph.Spelled
		}{{"full", nil}, {"spelled", spelled}} {
			b.Run(c.name, func(b *testing.B) {
				defer cpuPerOp(b)()
				for b.Loop() {
					if _, err := graph.ParseWith(changed, graph.ParseOptions{Lean: true, Spelled: c.spelled}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// BenchmarkRender renders a freshly parsed state in its own format (posted):
// fragments copied; and one rebuilt from (Resource, Object) pairs as a store
// returns them (stored): every instance re-laid out.
func BenchmarkRender(b *testing.B) {
	b.Run("posted", func(b *testing.B) {
		eachFormat(b, func(b *testing.B, f graph.Format, doc, _ []byte) {
			st, err := graph.Parse(doc)
			if err != nil {
				b.Fatal(err)
			}
			defer cpuPerOp(b)()
			for b.Loop() {
				st.Render(f)
			}
		})
	})
	b.Run("stored", func(b *testing.B) {
		eachFormat(b, func(b *testing.B, f graph.Format, doc, _ []byte) {
			st, err := graph.Parse(doc)
			if err != nil {
				b.Fatal(err)
			}
			stored := *st
			stored.Instances = nil
			for _, in := range st.Instances {
				nin, err := graph.NewInstance(in.Resource, in.Object)
				if err != nil {
					b.Fatal(err)
				}
				stored.Instances = append(stored.Instances, nin)
			}
			defer cpuPerOp(b)()
			for b.Loop() {
				stored.Render(f)
			}
		})
	})
	// What a GET of a small state costs (B/op): its bytes, not RenderTo's
	// two 32 KiB chunks.
	b.Run("small to a writer", func(b *testing.B) {
		st, err := graph.Parse(graphtest.Generate(2, 200, graph.FormatIndent))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.RenderTo(io.Discard, graph.FormatIndent); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDiff compares two versions of the big state.
func BenchmarkDiff(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, changed []byte) {
		prev, _ := graph.Parse(doc)
		next, _ := graph.ParseReusing(changed, prev)
		defer cpuPerOp(b)()
		for b.Loop() {
			if c := graph.Diff(prev, next); len(c.Changed) != 2 {
				b.Fatalf("%+v", c)
			}
		}
	})
}

// BenchmarkCanonicalHash is the cost of identity by meaning: the
// CanonicalHash of each of the big state's 10,000 instances (one op is all
// 10,000). Diff pays it only for instances whose bytes differ from the
// other side's.
func BenchmarkCanonicalHash(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, _ []byte) {
		st, err := graph.Parse(doc)
		if err != nil {
			b.Fatal(err)
		}
		defer cpuPerOp(b)()
		for b.Loop() {
			for i := range st.Instances {
				st.Instances[i].CanonicalHash()
			}
		}
	})
}

// BenchmarkDiffRespelled compares the big state with its re-serialization
// by encoding/json (keys sorted, HTML-safe escapes): every instance's
// bytes differ, so every pair is compared by canonical form, and none is
// changed.
func BenchmarkDiffRespelled(b *testing.B) {
	eachFormat(b, func(b *testing.B, _ graph.Format, doc, _ []byte) {
		prev, _ := graph.Parse(doc)
		next, err := graph.Parse(graphtest.GoMap(b, doc))
		if err != nil {
			b.Fatal(err)
		}
		defer cpuPerOp(b)()
		for b.Loop() {
			if c := graph.Diff(prev, next); !c.Empty() {
				b.Fatalf("%+v", c)
			}
		}
	})
}

// BenchmarkDepIndex is what the first cone or slice of a version costs
// once (the engine caches the index with the version's graph): indexing
// the dependency edges of the bench state.
func BenchmarkDepIndex(b *testing.B) {
	s, err := graph.Parse(benchDocs()[graph.FormatIndent][0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var x *graph.DepIndex
	for b.Loop() {
		x = graph.NewDepIndex(s)
	}
	b.ReportMetric(float64(x.Bytes()), "index-bytes")
}

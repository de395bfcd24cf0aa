package httpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
)

// The speed targets are set on one state: 10,000 instances of about 1 KB
// of attributes each (about 13 MB as Terraform writes it). A POST that
// changes 2 instances should cost at most 1.5× the floor of reading the
// body and json.Unmarshal-ing it once; a GET of the current version at most
// 1.2× writing the same bytes from memory. Each benchmark reports its ratio
// to the floor as x_floor.
const (
	benchInstances = 10000
	benchAttrBytes = 1024
	priorVersions  = 1000
)

func TestMain(m *testing.M) { testpg.Main(m) }

var benchBase = sync.OnceValue(func() []byte {
	return graphtest.Generate(benchInstances, benchAttrBytes, graph.FormatIndent)
})

// postFloor is what any server must do with a POST body: read it and decode
// it once into the tfstate v4 mirror (attributes as json.RawMessage).
func postFloor(body []byte) error {
	r := bytes.NewReader(body)
	b := make([]byte, len(body))
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	var s graphtest.StateV4
	return json.Unmarshal(b, &s)
}

// getFloor is what any server must do with a GET: write the bytes it has in
// memory to the response.
func getFloor(body []byte) {
	w := httptest.NewRecorder()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func BenchmarkPostFloor(b *testing.B) {
	body := benchBase()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := postFloor(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetFloor(b *testing.B) {
	body := benchBase()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		getFloor(body)
	}
}

// benchBackend opens an empty store of one kind, kept until owner ends.
type benchBackend struct {
	name string
	open func(owner testing.TB) (kilolock.Store, error)
}

var benchBackends = []benchBackend{
	{"sqlite", func(owner testing.TB) (kilolock.Store, error) {
		st, err := sqlite.Open(context.Background(), filepath.Join(owner.TempDir(), "bench.db"))
		if err == nil {
			owner.Cleanup(func() { st.Close() })
		}
		return st, err
	}},
	{"postgres", func(owner testing.TB) (kilolock.Store, error) {
		st, err := postgres.Open(context.Background(), testpg.URL(owner))
		if err == nil {
			owner.Cleanup(func() { st.Close() })
		}
		return st, err
	}},
}

// postBench is a Handler on a store holding the bench state, and the
// series of its next versions.
type postBench struct {
	h      *Handler
	engine *kilolock.Engine
	series *graphtest.Series
}

// newPostBench opens a store of kind be, kept until owner ends, and writes
// the bench state's first version.
func newPostBench(b *testing.B, owner testing.TB, be benchBackend) *postBench {
	st, err := be.open(owner)
	if err != nil {
		b.Fatal(err)
	}
	engine := kilolock.NewEngine(st, kilolock.Options{Logger: log.New(os.Stderr)})
	pb := &postBench{h: New(engine, Options{Logger: log.NewWithOptions(os.Stderr, log.Options{Level: log.ErrorLevel})}), engine: engine, series: newSeries(b, benchBase())}
	if _, err := engine.Write(b.Context(), "bench", benchBase(), kilolock.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	return pb
}

// prefill commits n more versions of 2 changes each, outside any timer.
func (pb *postBench) prefill(b *testing.B, n int) {
	start := time.Now()
	for range n {
		if _, err := pb.engine.Write(context.Background(), "bench", pb.series.Next(), kilolock.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("prefilled %d versions in %s", n, time.Since(start).Round(time.Millisecond))
}

// run POSTs b.N successive versions through the handler, as a client does
// (Content-MD5 and all). Before each, outside the timer, it runs the floor
// on the same body, so that x_floor compares the two under the same load
// (this machine is shared). It also reports the rows and bytes each version
// wrote.
func (pb *postBench) run(b *testing.B) {
	var (
		rows, dbBytes int
		floor         time.Duration
	)
	b.SetBytes(int64(len(benchBase())))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		// Each version is a fresh copy made outside the timer, since the
		// engine keeps the bytes it serves.
		doc := pb.series.Next()
		runtime.GC() // neither side pays for the other's garbage
		start := time.Now()
		if err := postFloor(doc); err != nil {
			b.Fatal(err)
		}
		floor += time.Since(start)
		req := httptest.NewRequest("POST", "/v1/states/bench", bytes.NewReader(doc))
		req.Header.Set("Content-MD5", md5Of(doc))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		runtime.GC()
		b.StartTimer()

		pb.h.ServeHTTP(w, req)

		b.StopTimer()
		if w.Code != http.StatusOK {
			b.Fatalf("POST: %d %s", w.Code, w.Body)
		}
		var ans writeAnswer
		json.Unmarshal(w.Body.Bytes(), &ans)
		rows += ans.Rows
		dbBytes += ans.Bytes
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(floor), "x_floor")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor_ns/op")
	b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
	b.ReportMetric(float64(dbBytes)/float64(b.N), "dbbytes/op")
}

// BenchmarkPost2Changes POSTs versions of the bench state that each change
// 2 of its 10,000 instances, end to end through the handler, on each store:
// from the first version on (versions=N), and after 1,000 earlier versions
// (after=1000), which must cost the same.
func BenchmarkPost2Changes(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			b.Run("versions=N", func(b *testing.B) {
				newPostBench(b, b, be).run(b)
			})
			// One store with 1,000 versions serves every round of the
			// sub-benchmark (history only grows from there); it lives as
			// long as this parent benchmark.
			parent := b
			var pb *postBench
			b.Run("after="+strconv.Itoa(priorVersions), func(b *testing.B) {
				if pb == nil {
					pb = newPostBench(b, parent, be)
					pb.prefill(b, priorVersions)
				}
				pb.run(b)
			})
		})
	}
}

// BenchmarkGetCurrent GETs the current version of the bench state through
// the handler: plain (rendered from the version's graph as it is written)
// and gzip as both CLIs ask for it (from the compressed copy the first GET
// made; the first GET of each version, which compresses it as it streams,
// is measured by internal/e2e's BenchmarkKLDMemory). Each GET is paired
// with a run of the floor (writing the same bytes from memory) outside the
// timer, for x_floor.
func BenchmarkGetCurrent(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			pb := newPostBench(b, b, be)
			for _, enc := range []string{"plain", "gzip"} {
				b.Run(enc, func(b *testing.B) {
					req := httptest.NewRequest("GET", "/v1/states/bench", nil)
					if enc == "gzip" {
						req.Header.Set("Accept-Encoding", "gzip")
					}
					first := httptest.NewRecorder()
					pb.h.ServeHTTP(first, req)
					body := first.Body.Bytes()
					var floor time.Duration
					b.SetBytes(int64(len(body)))
					b.ResetTimer()
					for range b.N {
						b.StopTimer()
						runtime.GC() // neither side pays for the other's garbage
						start := time.Now()
						getFloor(body)
						floor += time.Since(start)
						w := httptest.NewRecorder()
						runtime.GC()
						b.StartTimer()

						pb.h.ServeHTTP(w, req)

						b.StopTimer()
						if w.Code != http.StatusOK || w.Body.Len() != len(body) {
							b.Fatalf("GET: %d, %d bytes, want 200 with %d", w.Code, w.Body.Len(), len(body))
						}
						b.StartTimer()
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed())/float64(floor), "x_floor")
					b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor_ns/op")
				})
			}
		})
	}
}

// newSeries is graphtest.NewSeries, failing tb on a document it cannot
// read.
func newSeries(tb testing.TB, doc []byte) *graphtest.Series {
	tb.Helper()
	s, err := graphtest.NewSeries(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

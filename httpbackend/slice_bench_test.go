package httpbackend

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"testing"
	"time"
)

// BenchmarkSlice GETs slices of the 10,000-instance bench state through
// the handler, on each store: 1, 100 and 1,000 instances (cone=none, so
// that the slice's size is the one asked for) and one instance with its
// dependencies (a resource of 2 instances and one it rests on). Before each, outside the timer, it GETs the whole current
// version the same way, so that x_get is the slice's cost against the
// full GET's under the same load; a slice costs what it holds, not what
// the state holds. The version's dependency index is built by the first
// slice, before the timer (BenchmarkDepIndex in graph measures it).
func BenchmarkSlice(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			pb := newPostBench(b, b, be)
			g, _, err := pb.engine.Graph(b.Context(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			pick := func(n int) url.Values {
				q := url.Values{"cone": {"none"}}
				for i := range n {
					q.Add("address", g.Instances[i*len(g.Instances)/n].Address())
				}
				return q
			}
			cases := []struct {
				name string
				q    url.Values
			}{
				{"instances=1", pick(1)},
				{"instances=100", pick(100)},
				{"instances=1000", pick(1000)},
				// An instance of r00001 rests on r00000.
				{"resource_with_dependencies", url.Values{"cone": {"dependencies"}, "address": {"module.app.terraform_data.r00001"}}},
			}
			full := httptest.NewRequest("GET", "/v1/states/bench", nil)
			for _, c := range cases {
				b.Run(c.name, func(b *testing.B) {
					req := httptest.NewRequest("GET", "/v1/api/states/bench/slice?"+c.q.Encode(), nil)
					w := httptest.NewRecorder()
					pb.h.ServeHTTP(w, req) // builds the dependency index
					if w.Code != http.StatusOK {
						b.Fatalf("slice: %d %s", w.Code, w.Body)
					}
					b.Logf("%s: %d bytes of %d", c.name, w.Body.Len(), len(benchBase()))
					var get time.Duration
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						b.StopTimer()
						runtime.GC() // neither side pays for the other's garbage
						fw := httptest.NewRecorder()
						start := time.Now()
						pb.h.ServeHTTP(fw, full)
						get += time.Since(start)
						if fw.Code != http.StatusOK {
							b.Fatalf("full GET: %d", fw.Code)
						}
						w := httptest.NewRecorder()
						runtime.GC()
						b.StartTimer()

						pb.h.ServeHTTP(w, req)

						b.StopTimer()
						if w.Code != http.StatusOK {
							b.Fatalf("slice: %d %s", w.Code, w.Body)
						}
						b.SetBytes(int64(w.Body.Len()))
						b.StartTimer()
					}
					b.StopTimer()
					b.ReportMetric(float64(b.Elapsed())/float64(get), "x_get")
					b.ReportMetric(float64(get.Nanoseconds())/float64(b.N), "get_ns/op")
				})
			}
		})
	}
}

package httpbackend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
)

// BenchmarkOptimistic4Writers commits through the handler, on each store,
// as 4 optimistic writers do on the bench state (10,000 instances of about
// 1 KB): in each round all 4 lock and read the same version, then POST at
// once, each changing 2 instances of its own; one commit applies, the
// others merge onto it. An op is one commit. Only the concurrent POSTs are
// timed, so ns/op is wall time per commit under that contention and
// latency_ns/op what one writer waits for its POST. rows/op and dbbytes/op
// are what each commit wrote: they must stay O(changes), as for a plain
// POST (BenchmarkPost2Changes), however large the state.
func BenchmarkOptimistic4Writers(b *testing.B) {
	const writers = 4
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			st, err := be.open(b)
			if err != nil {
				b.Fatal(err)
			}
			engine := kilolock.NewEngine(st, kilolock.Options{Logger: log.NewWithOptions(os.Stderr, log.Options{Level: log.ErrorLevel})})
			h := New(engine, Options{Logger: log.NewWithOptions(os.Stderr, log.Options{Level: log.ErrorLevel})})
			serve := func(method, target string, body []byte) *httptest.ResponseRecorder {
				var r *http.Request
				if body == nil {
					r = httptest.NewRequest(method, target, nil)
				} else {
					r = httptest.NewRequest(method, target, bytes.NewReader(body))
					r.Header.Set("Content-MD5", md5Of(body))
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			if w := serve("POST", "/v1/api/states/bench/config", []byte(`{"exclusive_locks": false}`)); w.Code != http.StatusOK {
				b.Fatalf("config: %d %s", w.Code, w.Body)
			}
			if w := serve("POST", "/v1/states/bench", benchBase()); w.Code != http.StatusOK {
				b.Fatalf("first POST: %d %s", w.Code, w.Body)
			}
			layout := newSeries(b, benchBase())
			quarter := layout.Len() / writers

			var (
				rows, dbBytes, merges int
				latency               time.Duration
				round                 int
			)
			b.SetBytes(int64(len(benchBase())))
			b.ResetTimer()
			b.StopTimer()
			for done := 0; done < b.N; round++ {
				k := min(writers, b.N-done)
				locks := make([]kilolock.LockInfo, k)
				for w := range k {
					locks[w] = lockInfo(fmt.Sprintf("w%d-r%d", w, round), fmt.Sprintf("writer-%d", w))
					if r := serve("LOCK", "/v1/states/bench", mustJSON(b, locks[w])); r.Code != http.StatusOK {
						b.Fatalf("LOCK: %d %s", r.Code, r.Body)
					}
				}
				read := serve("GET", "/v1/states/bench", nil)
				if read.Code != http.StatusOK {
					b.Fatalf("GET: %d", read.Code)
				}
				docs := make([][]byte, k)
				for w := range k {
					first := w*quarter + (2*round)%quarter
					doc, err := layout.Edit(read.Body.Bytes(), first, first+1)
					if err != nil {
						b.Fatal(err)
					}
					docs[w] = doc
				}
				answers := make([]*httptest.ResponseRecorder, k)
				took := make([]time.Duration, k)
				var wg sync.WaitGroup
				runtime.GC()
				b.StartTimer()
				for w := range k {
					wg.Go(func() {
						start := time.Now()
						answers[w] = serve("POST", "/v1/states/bench?ID="+locks[w].ID, docs[w])
						took[w] = time.Since(start)
					})
				}
				wg.Wait()
				b.StopTimer()
				for w, r := range answers {
					if r.Code != http.StatusOK {
						b.Fatalf("POST by writer %d: %d %s", w, r.Code, r.Body)
					}
					var ans writeAnswer
					json.Unmarshal(r.Body.Bytes(), &ans)
					rows += ans.Rows
					dbBytes += ans.Bytes
					if ans.Merged {
						merges++
					}
					latency += took[w]
					serve("UNLOCK", "/v1/states/bench", mustJSON(b, locks[w]))
				}
				done += k
			}
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
			b.ReportMetric(float64(dbBytes)/float64(b.N), "dbbytes/op")
			b.ReportMetric(float64(merges)/float64(b.N), "merges/op")
			b.ReportMetric(float64(latency.Nanoseconds())/float64(b.N), "latency_ns/op")
		})
	}
}

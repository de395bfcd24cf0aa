package kilolock_test

import (
	"context"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// BenchmarkCacheMiss measures what the cache of current versions saves:
// a write (2 of 500 instances changed, 0.4 MB as Terraform writes it) and
// a read of a state the cache keeps whole (hit), against the same on a
// state it let go of (miss: the engine loads the version from the store
// first), on each store. Between two requests on the bench state, outside
// the timer, another state is written: with a cache of its least (1 byte)
// that lets go of the bench state. The goal is a miss costing at most 2×
// a hit for a write; a read's miss is a load against a copy, and is shown
// for what it is.
func BenchmarkCacheMiss(b *testing.B) {
	base := graphtest.Generate(500, 560, graph.FormatIndent)
	enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
		return b.Run(store, func(b *testing.B) {
			for _, c := range []struct {
				name  string
				bytes int64
			}{{"hit", 0}, {"miss", 1}} {
				for _, op := range []string{"write", "read"} {
					b.Run(op+"/"+c.name, func(b *testing.B) {
						ctx := context.Background()
						e := kilolock.NewEngine(open(b), kilolock.Options{CacheBytes: c.bytes})
						series, err := graphtest.NewSeries(base)
						if err != nil {
							b.Fatal(err)
						}
						other := graphtest.Generate(50, 100, graph.FormatIndent)
						for _, name := range []string{"bench", "other"} {
							if _, err := e.Write(ctx, name, base, kilolock.WriteOptions{}); err != nil {
								b.Fatal(err)
							}
						}
						var hits, misses int64
						b.SetBytes(int64(len(base)))
						b.ResetTimer()
						for range b.N {
							b.StopTimer()
							doc := series.Next()
							if op == "read" {
								if _, err := e.Write(ctx, "bench", doc, kilolock.WriteOptions{}); err != nil {
									b.Fatal(err)
								}
							}
							other = graphtest.Change(other, []int{1}, graph.FormatIndent)
							if _, err := e.Write(ctx, "other", other, kilolock.WriteOptions{}); err != nil {
								b.Fatal(err)
							}
							before := e.CacheStats()
							b.StartTimer()
							if op == "write" {
								if _, err := e.Write(ctx, "bench", doc, kilolock.WriteOptions{}); err != nil {
									b.Fatal(err)
								}
							} else if _, err := e.Read(ctx, "bench"); err != nil {
								b.Fatal(err)
							}
							b.StopTimer()
							after := e.CacheStats()
							hits, misses = hits+after.Hits-before.Hits, misses+after.Misses-before.Misses
						}
						b.ReportMetric(float64(misses)/float64(hits+misses), "miss_ratio")
					})
				}
			}
		})
	})
}

package kilolock_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/internal/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestVersionCostIsProportionalToChanges is the storage promise: after a
// 10,000-instance state (about 1 KB of attributes each), every version that
// changes 2 instances writes at most 10 rows and 64 KB, keeps no copy of the
// posted bytes, and still reads back byte for byte.
func TestVersionCostIsProportionalToChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 51 versions of a 10,000-instance state")
	}
	const n, versions = 10000, 50
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			doc := graphtest.Generate(n, 1024, graph.FormatIndent)
			start := time.Now()
			first, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("first write: %d instances, %d rows, %d bytes, %v", n, first.Stats.Rows, first.Stats.Bytes, time.Since(start).Round(time.Millisecond))
			var rows, size int
			start = time.Now()
			for i := 0; i < versions; i++ {
				doc = graphtest.Change(doc, enginetest.Changed(i, n), graph.FormatIndent)
				res, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{})
				if err != nil {
					t.Fatalf("version %d: %v", i+2, err)
				}
				if res.Version.Changed != 2 || res.Version.Added+res.Version.Removed != 0 {
					t.Fatalf("version %d counts +%d ~%d -%d, want ~2", i+2, res.Version.Added, res.Version.Changed, res.Version.Removed)
				}
				if res.Stats.Rows > 10 || res.Stats.Bytes > 64<<10 {
					t.Fatalf("version %d wrote %d rows and %d bytes; want at most 10 rows and 64 KB", i+2, res.Stats.Rows, res.Stats.Bytes)
				}
				rows += res.Stats.Rows
				size += res.Stats.Bytes
			}
			t.Logf("per 2-instance version: %.1f rows, %d bytes, %v", float64(rows)/versions, size/versions, (time.Since(start) / versions).Round(time.Microsecond))
			if n := enginetest.RawVersions(t, st); n != 0 {
				t.Fatalf("%d versions stored a copy of the posted bytes", n)
			}
			got, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "big")
			if err != nil || !bytes.Equal(got.Bytes, doc) {
				t.Fatalf("a fresh engine did not read back the last posted bytes (err %v)", err)
			}
		})
	})
}

// BenchmarkVersionCost measures a first write of n instances and then
// versions changing 2 instances each, as the CLI writes them and
// re-serialized by another writer, on both stores: time, rows and bytes
// written per version.
func BenchmarkVersionCost(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
			ctx := context.Background()
			doc := graphtest.Generate(n, 1024, graph.FormatIndent)
			b.Run(fmt.Sprintf("%s/first/n=%d", store, n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					e := kilolock.NewEngine(open(b), kilolock.Options{})
					b.StartTimer()
					res, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(res.Stats.Rows), "rows/op")
					b.ReportMetric(float64(res.Stats.Bytes), "dbbytes/op")
				}
			})
			// change2: the CLI's own bytes; respelled2: the same versions
			// re-serialized by Go's encoding/json (sorted keys), each
			// changing 2 instances too.
			ok := true
			for _, v := range []struct {
				name  string
				spell func(testing.TB, []byte) []byte
			}{
				{"change2", func(_ testing.TB, d []byte) []byte { return d }},
				{"respelled2", graphtest.GoMap},
			} {
				ok = ok && b.Run(fmt.Sprintf("%s/%s/n=%d", store, v.name, n), func(b *testing.B) {
					e := kilolock.NewEngine(open(b), kilolock.Options{})
					if _, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{}); err != nil {
						b.Fatal(err)
					}
					cur := doc
					var rows, size int
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						cur = graphtest.Change(cur, enginetest.Changed(i, n), graph.FormatIndent)
						body := v.spell(b, cur)
						b.StartTimer()
						res, err := e.Write(ctx, "big", body, kilolock.WriteOptions{})
						if err != nil {
							b.Fatal(err)
						}
						if res.Version.Changed != 2 {
							b.Fatalf("~%d, want 2", res.Version.Changed)
						}
						rows += res.Stats.Rows
						size += res.Stats.Bytes
					}
					b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
					b.ReportMetric(float64(size)/float64(b.N), "dbbytes/op")
				})
			}
			return ok
		})
	}
}

package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// BenchChangesSince measures ChangesSince(current-4) on s, on a state of
// 10,000 instances of about 1 KB after 100 and after 1,000 versions of 2
// changes each: what an optimistic commit asks about the writers it raced.
// Its cost must not grow with the history. Beside wall time it reports, per
// operation, how far cost (a store's own measure: CPU time, buffers read)
// moved, as unit.
func BenchChangesSince(b *testing.B, s kilolock.Store, unit string, cost func() float64) {
	ctx := context.Background()
	v, _, err := s.Commit(ctx, "bench", firstFleet(b))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, history := range []int{100, 1000} {
		for ; n < history; n++ {
			c := &kilolock.Commit{
				Parent:  v.Number,
				Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact", Actor: fmt.Sprint("writer-", n%4)},
				Upserts: []graph.Instance{fleet(b, (2*n)%fleetSize, n+1), fleet(b, (2*n+1)%fleetSize, n+1)},
			}
			if v, _, err = s.Commit(ctx, "bench", c); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("versions=%d", history), func(b *testing.B) {
			before := cost()
			var records int
			for b.Loop() {
				changes, err := s.ChangesSince(ctx, "bench", v.Number-4)
				if err != nil {
					b.Fatal(err)
				}
				records = len(changes)
			}
			if records != 8 {
				b.Fatalf("%d records, want 8", records)
			}
			b.ReportMetric(float64(records), "records/op")
			if used := cost() - before; used > 0 {
				b.ReportMetric(used/float64(b.N), unit)
			}
		})
	}
}

// BenchCommit2of10000 measures, on s, commits that change 2 instances of a
// state of 10,000 instances of about 1 KB of attributes each: rows and
// bytes written per version, and the rows, bytes and time of the first
// write.
func BenchCommit2of10000(b *testing.B, s kilolock.Store) {
	ctx := context.Background()
	start := time.Now()
	v, first, err := s.Commit(ctx, "bench", firstFleet(b))
	if err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	var rows, bytes int
	for n := 0; b.Loop(); n++ {
		c := &kilolock.Commit{
			Parent:  v.Number,
			Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact"},
			Upserts: []graph.Instance{fleet(b, (2*n)%fleetSize, n+1), fleet(b, (2*n+1)%fleetSize, n+1)},
		}
		var stats kilolock.WriteStats
		if v, stats, err = s.Commit(ctx, "bench", c); err != nil {
			b.Fatal(err)
		}
		rows += stats.Rows
		bytes += stats.Bytes
	}
	// Reported after the loop: b.Loop resets the timer and the metrics
	// reported before it.
	b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes/op")
	b.ReportMetric(float64(first.Rows), "first-rows")
	b.ReportMetric(float64(first.Bytes), "first-bytes")
	b.ReportMetric(elapsed.Seconds()*1000, "first-ms")
}

const fleetSize = 10_000

var fleetPad = strings.Repeat("abcdefghij", 90)

// fleet is instance i, revision rev, of a fleet of fleetSize aws_instances
// with about 1 KB of attributes each.
func fleet(tb testing.TB, i, rev int) graph.Instance {
	return instance(tb, resource("aws_instance", "fleet"), intKey(int64(i)),
		fmt.Sprintf(`{"id":"i-%08d","rev":%d,"user_data":%q}`, i, rev, fleetPad), "data.aws_ami.ubuntu")
}

// firstFleet is the first write of the fleet.
func firstFleet(tb testing.TB) *kilolock.Commit {
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
	for i := range fleetSize {
		c.Upserts = append(c.Upserts, fleet(tb, i, 0))
	}
	return c
}

package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/store/sqlite"
	"github.com/kilolock/kilolock/store/storetest"
)

// open opens a store on a new file in a temporary directory.
func open(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kilolock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t testing.TB) kilolock.Store { return open(t) })
}

// fleetPad pads the attributes of fleet instances to ~1 KB.
var fleetPad = func() []byte {
	pad := make([]byte, 900)
	for i := range pad {
		pad[i] = 'a' + byte(i%26)
	}
	return pad
}()

// fleet is instance i, revision rev, of a fleet of aws_instances with ~1 KB
// of attributes each.
func fleet(tb testing.TB, i, rev int) graph.Instance {
	tb.Helper()
	r := graph.Resource{Mode: "managed", Type: "aws_instance", Name: "fleet", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`}
	in, err := graph.NewInstance(r, fmt.Appendf(nil,
		`{"index_key":%d,"schema_version":1,"attributes":{"id":"i-%08d","ami":"ami-0c55b159cbfafe1f0","rev":%d,"user_data":"%s"},"sensitive_attributes":[],"dependencies":["aws_security_group.fleet","data.aws_ami.ubuntu"]}`,
		i, i, rev, fleetPad))
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// BenchmarkCommit2of10000 measures a version that changes 2 instances of a
// state of 10,000 instances with ~1 KB of attributes each: rows and bytes
// written per version, and the cost of the first write.
func BenchmarkCommit2of10000(b *testing.B) {
	const size = 10_000
	ctx := context.Background()
	s := open(b)
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
	for i := range size {
		c.Upserts = append(c.Upserts, fleet(b, i, 0))
	}
	start := time.Now()
	v, first, err := s.Commit(ctx, "bench", c)
	if err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)

	var rows, bytes int
	for n := 0; b.Loop(); n++ {
		c := &kilolock.Commit{
			Parent:  v.Number,
			Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact"},
			Upserts: []graph.Instance{fleet(b, (2*n)%size, n+1), fleet(b, (2*n+1)%size, n+1)},
		}
		var stats kilolock.WriteStats
		v, stats, err = s.Commit(ctx, "bench", c)
		if err != nil {
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

// BenchmarkChangesSince measures ChangesSince(current-4) on a state of
// 10,000 instances after 100 and after 1,000 versions of 2 changes each:
// what an optimistic commit asks about the writers it raced. Its cost must
// not grow with the history.
func BenchmarkChangesSince(b *testing.B) {
	const size = 10_000
	ctx := context.Background()
	s := open(b)
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
	for i := range size {
		c.Upserts = append(c.Upserts, fleet(b, i, 0))
	}
	v, _, err := s.Commit(ctx, "bench", c)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, history := range []int{100, 1000} {
		for ; n < history; n++ {
			c := &kilolock.Commit{
				Parent:  v.Number,
				Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact", Actor: fmt.Sprint("writer-", n%4)},
				Upserts: []graph.Instance{fleet(b, (2*n)%size, n+1), fleet(b, (2*n+1)%size, n+1)},
			}
			if v, _, err = s.Commit(ctx, "bench", c); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("versions=%d", history), func(b *testing.B) {
			// The store works in this process, so its CPU time per
			// operation is steadier than wall time on a busy machine.
			cpu := processCPU()
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
			if used := processCPU() - cpu; used > 0 {
				b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

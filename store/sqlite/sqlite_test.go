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

// BenchmarkCommit2of10000 measures a version that changes 2 instances of a
// state of 10,000 instances with ~1 KB of attributes each: rows and bytes
// written per version, and the cost of the first write.
func BenchmarkCommit2of10000(b *testing.B) {
	const size = 10_000
	ctx := context.Background()
	s := open(b)
	r := graph.Resource{Mode: "managed", Type: "aws_instance", Name: "fleet", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`}
	pad := make([]byte, 900)
	for i := range pad {
		pad[i] = 'a' + byte(i%26)
	}
	obj := func(i, rev int) graph.Instance {
		in, err := graph.NewInstance(r, fmt.Appendf(nil,
			`{"index_key":%d,"schema_version":1,"attributes":{"id":"i-%08d","ami":"ami-0c55b159cbfafe1f0","rev":%d,"user_data":"%s"},"sensitive_attributes":[],"dependencies":["aws_security_group.fleet","data.aws_ami.ubuntu"]}`,
			i, i, rev, pad))
		if err != nil {
			b.Fatal(err)
		}
		return in
	}
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
	for i := range size {
		c.Upserts = append(c.Upserts, obj(i, 0))
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
			Upserts: []graph.Instance{obj((2*n)%size, n+1), obj((2*n+1)%size, n+1)},
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

package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// BenchCommitText is BenchCommit2of10000 on the text the text index
// (inventory.SearchText) is fed in practice, for each kind of text: random
// letters, as graphtest generates them (about 430 distinct trigrams an
// object, its worst case), and objects like those a cloud provider writes
// (ids, names, ARNs, tags, addresses: few distinct trigrams, shared by
// many objects). It reports the first write's time and bytes and the time
// of a write of 2 changes; with cpu (the process's CPU time, where the
// store's work is done in it), their CPU times too, which a busy machine
// changes less than their wall times. A store that indexes text after a
// write commits gives settle, which indexes what is left: the first
// write's indexing is then reported apart (index-ms, index-cpu-ms), and
// the writes of 2 changes start without it.
func BenchCommitText(b *testing.B, s kilolock.Store, cpu func() time.Duration, settle func(context.Context) error) {
	for _, kind := range []string{"random", "cloud"} {
		b.Run("text="+kind, func(b *testing.B) {
			ctx := context.Background()
			state := "bench-" + kind
			obj := func(i, rev int) graph.Instance {
				return instance(b, resource("aws_instance", "fleet"), intKey(int64(i)), fleetText(kind, i, rev))
			}
			first := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
			for i := range fleetSize {
				first.Upserts = append(first.Upserts, obj(i, 0))
			}
			if cpu == nil {
				cpu = func() time.Duration { return 0 }
			}
			start, startCPU := time.Now(), cpu()
			v, stats, err := s.Commit(ctx, state, first)
			if err != nil {
				b.Fatal(err)
			}
			elapsed, firstCPU := time.Since(start), cpu()-startCPU
			first = nil
			var indexing, indexingCPU time.Duration
			if settle != nil {
				start, startCPU := time.Now(), cpu()
				if err := settle(ctx); err != nil {
					b.Fatal(err)
				}
				indexing, indexingCPU = time.Since(start), cpu()-startCPU
			}
			loopCPU := cpu()
			for n := 0; b.Loop(); n++ {
				c := &kilolock.Commit{
					Parent:  v.Number,
					Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact"},
					Upserts: []graph.Instance{obj((2*n*7919)%fleetSize, n+1), obj((2*n*7919+fleetSize/2)%fleetSize, n+1)},
				}
				if v, _, err = s.Commit(ctx, state, c); err != nil {
					b.Fatal(err)
				}
			}
			loopCPU = cpu() - loopCPU
			b.ReportMetric(float64(stats.Bytes), "first-bytes")
			b.ReportMetric(elapsed.Seconds()*1000, "first-ms")
			if settle != nil {
				b.ReportMetric(indexing.Seconds()*1000, "index-ms")
			}
			if settle != nil && firstCPU > 0 {
				b.ReportMetric(indexingCPU.Seconds()*1000, "index-cpu-ms")
			}
			if firstCPU > 0 {
				b.ReportMetric(firstCPU.Seconds()*1000, "first-cpu-ms")
				b.ReportMetric(loopCPU.Seconds()*1000/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

// fleetText is the attributes of instance i, revision rev, of a fleet
// whose text is of the given kind (see BenchCommitText), about 1 KB.
func fleetText(kind string, i, rev int) string {
	if kind == "random" {
		rng := rand.New(rand.NewPCG(uint64(i), uint64(rev)))
		p := make([]byte, 430)
		for k := range p {
			p[k] = 'a' + byte(rng.IntN(26))
		}
		return fmt.Sprintf(`{"id":"%08x-%04x","input":{"value":"%s","type":"string"},"output":{"value":"%s","type":"string"}}`, rng.Uint32(), i&0xffff, p, p)
	}
	az := []string{"a", "b", "c"}[i%3]
	return fmt.Sprintf(`{"id":"i-%017x","arn":"arn:aws:ec2:eu-west-1:123456789012:instance/i-%017x","ami":"ami-0%016x",`+
		`"instance_type":"t3.%s","availability_zone":"eu-west-1%s","subnet_id":"subnet-%017x","vpc_security_group_ids":["sg-%017x","sg-0a1b2c3d4e5f60718"],`+
		`"private_ip":"10.%d.%d.%d","private_dns":"ip-10-%d-%d-%d.eu-west-1.compute.internal","key_name":"deploy-%d",`+
		`"tags":{"Name":"web-%05d","Environment":"production","Team":"platform-%d","Service":"checkout-api","Revision":"%d"},`+
		`"root_block_device":[{"volume_id":"vol-%017x","volume_size":%d,"volume_type":"gp3","encrypted":true,"kms_key_id":"arn:aws:kms:eu-west-1:123456789012:key/%08x-1111-2222-3333-444455556666"}],`+
		`"iam_instance_profile":"web-profile-%d","monitoring":true,"ebs_optimized":true,"user_data_base64":null}`,
		0x0abc0000000+i, 0x0abc0000000+i, 0x1234+i%40, []string{"micro", "small", "medium", "large"}[i%4], az,
		0x5ab0000000+i%64, 0x5e60000000+i%200, i>>16&255, i>>8&255, i&255, i>>16&255, i>>8&255, i&255, i%5,
		i, i%12, rev, 0x7010000000+i, 8+i%5*8, 0xbeef0000+i%3, i%7)
}

// firstFleet is the first write of the fleet.
func firstFleet(tb testing.TB) *kilolock.Commit {
	c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
	for i := range fleetSize {
		c.Upserts = append(c.Upserts, fleet(tb, i, 0))
	}
	return c
}

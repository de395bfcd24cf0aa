package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/retention"
)

// BenchOpener opens an empty store for a benchmark.
type BenchOpener func(tb testing.TB) kilolock.Store

// backupBenchVersions and backupBenchChanged shape BenchBackupRestore: a
// state of fleetSize instances with that many versions, each changing that
// many instances.
const (
	backupBenchVersions = 1000
	backupBenchChanged  = 10
)

// BenchBackupRestore measures a backup and a restore of a store holding a
// state of 10,000 instances of about 1 KB each with 1,000 versions (the
// first write, then 999 commits of 10 changed instances): backup-ms and
// restore-ms per run, and the file's size. The store is built once, before
// the timer.
func BenchBackupRestore(b *testing.B, open BenchOpener) {
	ctx := context.Background()
	src := open(b)
	v, _, err := src.Commit(ctx, "fleet", firstFleet(b))
	if err != nil {
		b.Fatal(err)
	}
	for n := 1; n < backupBenchVersions; n++ {
		c := &kilolock.Commit{Parent: v.Number, Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact"}}
		for k := range backupBenchChanged {
			c.Upserts = append(c.Upserts, fleet(b, (n*backupBenchChanged+k)%fleetSize, n))
		}
		if v, _, err = src.Commit(ctx, "fleet", c); err != nil {
			b.Fatal(err)
		}
	}
	bs := backupStore(b, src)
	var file bytes.Buffer
	var backup, restore time.Duration
	var rows int64
	b.ResetTimer()
	for range b.N {
		file.Reset()
		start := time.Now()
		sum, err := bs.Backup(ctx, &file)
		if err != nil {
			b.Fatal(err)
		}
		backup += time.Since(start)
		rows = sum.Rows()
		b.StopTimer()
		dst := open(b)
		b.StartTimer()
		start = time.Now()
		if _, err := backupStore(b, dst).Restore(ctx, bytes.NewReader(file.Bytes()), retention.RestoreLimits{}); err != nil {
			b.Fatal(err)
		}
		restore += time.Since(start)
		b.StopTimer()
		if snap, err := dst.Snapshot(ctx, "fleet", backupBenchVersions); err != nil || len(snap.Instances) != fleetSize {
			b.Fatalf("the restored store's @%d: %v", backupBenchVersions, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(backup.Milliseconds())/float64(b.N), "backup-ms")
	b.ReportMetric(float64(restore.Milliseconds())/float64(b.N), "restore-ms")
	b.ReportMetric(float64(file.Len()), "file-bytes")
	b.ReportMetric(float64(rows), "rows")
}

// BenchPrune measures retention's cost per pruned version: a state of
// 10,000 instances with b.N+1 more versions, each changing 2 instances,
// is pruned one version per transaction (the first write's version is
// pruned last, outside the timer being a version of everything). Its
// ns/op is the cost of one pruned version, which depends on what the
// version changed, not on the state's size.
func BenchPrune(b *testing.B, s kilolock.Store) {
	ctx := context.Background()
	rs, ok := s.(retention.RetentionStore)
	if !ok {
		b.Fatalf("%T keeps no retention (retention.RetentionStore)", s)
	}
	v, _, err := s.Commit(ctx, "fleet", firstFleet(b))
	if err != nil {
		b.Fatal(err)
	}
	// Version 2 rewrites what version 1 held of the first b.N pairs, so
	// that pruning @1 first (untimed) leaves versions of 2 changes.
	for n := range b.N + 1 {
		c := &kilolock.Commit{Parent: v.Number, Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact"},
			Upserts: []graph.Instance{fleet(b, (2*n)%fleetSize, n+1), fleet(b, (2*n+1)%fleetSize, n+1)}}
		if v, _, err = s.Commit(ctx, "fleet", c); err != nil {
			b.Fatal(err)
		}
	}
	req := retention.PruneRequest{State: "fleet", KeepLast: 1, Max: 1, Policy: "bench", By: kilolock.Caller{Actor: "bench"}}
	if res, err := rs.Prune(ctx, req); err != nil || len(res.Versions) != 1 {
		b.Fatalf("prune @1: %+v, %v", res, err)
	}
	var intervals, payloads int
	b.ResetTimer()
	for range b.N {
		res, err := rs.Prune(ctx, req)
		if err != nil || len(res.Versions) != 1 {
			b.Fatalf("prune: %+v, %v", res, err)
		}
		intervals += res.Intervals + res.Moved
		payloads += res.Payloads
	}
	b.StopTimer()
	b.ReportMetric(float64(intervals)/float64(b.N), "intervals/op")
	b.ReportMetric(float64(payloads)/float64(b.N), "payloads/op")
}

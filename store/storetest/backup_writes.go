package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/retention"
)

// backupWriters and backupWidth shape testBackupUnderWrites: that many
// states written at once, each version of which rewrites backupWidth
// instances and an output.
const (
	backupWriters = 3
	backupWidth   = 4
)

// testBackupUnderWrites takes a backup while writers commit to several
// states, and holds it until each writer has committed more versions
// after the backup's snapshot began: the restored store has, for every
// state, exactly a prefix of its versions — every version acknowledged
// before the backup started, none begun after the snapshot — and each of
// them whole (all instances of version k hold k: none torn).
func testBackupUnderWrites(t *testing.T, open Opener) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := open(t)
	// Some bulk, so the backup's reads take a while.
	c := next(t, src, "bulk")
	for i := range 1500 {
		c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "bulk"), intKey(int64(i)), fmt.Sprintf(`{"id":"%d","pad":"%0200d"}`, i, i)))
	}
	commit(t, src, "bulk", c)

	var begun, acked [backupWriters]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, backupWriters)
	for w := range backupWriters {
		name := fmt.Sprintf("writer-%d", w)
		for range 2 { // a history before the backup
			begun[w].Add(1)
			if _, _, err := src.Commit(ctx, name, writerCommit(t, int64(acked[w].Load()))); err != nil {
				t.Fatal(err)
			}
			acked[w].Add(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n := acked[w].Load()
				begun[w].Add(1)
				if _, _, err := src.Commit(ctx, name, writerCommit(t, n)); err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("commit %s @%d: %w", name, n+1, err)
					}
					return
				}
				acked[w].Add(1)
			}
		}()
	}

	var before [backupWriters]int64
	for w := range before {
		before[w] = acked[w].Load()
	}
	var file bytes.Buffer
	var held [backupWriters]int64 // commits begun when the backup first wrote
	gate := &gatedWriter{w: &file, wait: func() error {
		// The snapshot has begun (its header is written): wait until every
		// writer has begun 3 more commits, which it cannot hold.
		var after [backupWriters]int64
		for w := range after {
			after[w] = begun[w].Load()
		}
		deadline := time.Now().Add(time.Minute)
		for w := range after {
			for acked[w].Load() < after[w]+3 {
				if time.Now().After(deadline) {
					return fmt.Errorf("writer %d made no progress during the backup", w)
				}
				time.Sleep(time.Millisecond)
			}
		}
		held = after
		return nil
	}}
	_, err := backupStore(t, src).Backup(ctx, gate)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err != nil {
		t.Fatalf("Backup under writes: %v", err)
	}
	if !gate.opened {
		t.Fatal("the backup wrote nothing")
	}

	dst := open(t)
	if _, err := backupStore(t, dst).Restore(context.Background(), &file, retention.RestoreLimits{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	for w := range backupWriters {
		name := fmt.Sprintf("writer-%d", w)
		got := state(t, dst, name).Current
		if got < before[w] || got > held[w] {
			t.Errorf("%s restored at @%d; want from @%d (acknowledged before the backup) to @%d (begun before it was held)", name, got, before[w], held[w])
		}
		if final := acked[w].Load(); got >= final {
			t.Errorf("%s restored at @%d, but it had @%d only after the snapshot", name, got, final)
		}
		t.Logf("%s: @%d acknowledged before the backup, @%d begun when it was held, @%d restored, @%d at the end", name, before[w], held[w], got, acked[w].Load())
		for n := int64(1); n <= got; n++ {
			checkWriterVersion(t, dst, name, n)
		}
		if _, err := dst.Snapshot(context.Background(), name, got+1); err == nil {
			t.Errorf("%s: @%d, committed after the snapshot, was restored", name, got+1)
		}
	}
	checkWhole(t, dst)
}

// writerCommit is version n+1 of a writer's state: every one of its
// backupWidth instances and its output hold n+1.
func writerCommit(t testing.TB, n int64) *kilolock.Commit {
	c := &kilolock.Commit{Parent: n, Version: kilolock.Version{Serial: uint64(n + 1), Lineage: lineage,
		TerraformVersion: "1.9.0", Source: kilolock.SourceApply, Actor: "writer", Format: "compact"}}
	for i := range backupWidth {
		c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "w"), intKey(int64(i)), fmt.Sprintf(`{"id":"%d","v":%d}`, i, n+1)))
	}
	c.OutputUpserts = []graph.Output{output("v", fmt.Sprint(n+1), false)}
	return c
}

// checkWriterVersion checks that version n of a writer's state is whole:
// every instance and the output hold n.
func checkWriterVersion(t testing.TB, s kilolock.Store, name string, n int64) {
	t.Helper()
	snap, err := s.Snapshot(context.Background(), name, n)
	if err != nil {
		t.Fatalf("Snapshot(%s, %d): %v", name, n, err)
	}
	if len(snap.Instances) != backupWidth || len(snap.Outputs) != 1 || snap.Version.Serial != uint64(n) {
		t.Fatalf("%s @%d: %d instances, %d outputs, serial %d; want %d, 1, %d", name, n, len(snap.Instances), len(snap.Outputs), snap.Version.Serial, backupWidth, n)
	}
	for _, in := range snap.Instances {
		var obj struct {
			Attributes struct{ V int64 }
		}
		if err := json.Unmarshal(in.Object, &obj); err != nil || obj.Attributes.V != n {
			t.Errorf("%s @%d: %s holds %s (%v); want v=%d: a torn version", name, n, in.Address(), in.Object, err, n)
		}
	}
	if want := fmt.Sprint(n); outputValue(t, snap.Outputs[0]) != want {
		t.Errorf("%s @%d: output v = %s; want %s", name, n, outputValue(t, snap.Outputs[0]), want)
	}
}

// outputValue is an output's value, a JSON string.
func outputValue(t testing.TB, o graph.Output) string {
	t.Helper()
	var v struct{ Value string }
	if err := json.Unmarshal(o.Object, &v); err != nil {
		t.Fatalf("output %s: %v", o.Name, err)
	}
	return v.Value
}

// gatedWriter passes writes to w, calling wait once before the first.
type gatedWriter struct {
	w      io.Writer
	wait   func() error
	opened bool
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	if !g.opened {
		g.opened = true
		if err := g.wait(); err != nil {
			return 0, err
		}
	}
	return g.w.Write(p)
}

package storetest

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/retention"
)

// restoreHugeLine restores into a store from open a backup whose second
// line is n bytes (streamed: compressed as it is read), with the default
// limits, and returns the bytes the process allocated meanwhile and the
// restore's error.
func restoreHugeLine(tb testing.TB, open Opener, n int64) (allocated uint64, err error) {
	s := open(tb)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = backupStore(tb, s).Restore(context.Background(), hugeLine(tb, n), retention.RestoreLimits{})
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// RunRestoreMemory checks that a restore refuses a line of 512 MiB past
// the default limit having allocated a few times the limit (16 MiB), not
// the line. It reads the process's allocation counters: run it on its own,
// not in parallel with other tests.
func RunRestoreMemory(t *testing.T, open Opener) {
	allocated, err := restoreHugeLine(t, open, 512<<20)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "backup_line_too_long" {
		t.Fatalf("a restore of a line of 512 MiB = %v, want backup_line_too_long", err)
	}
	if limit := uint64(4 * retention.DefaultMaxBackupLine); allocated > limit {
		t.Errorf("refusing a line of 512 MiB allocated %d MiB; want at most %d MiB (4 times the line limit)", allocated>>20, limit>>20)
	}
	t.Logf("refusing a line of 512 MiB allocated %.1f MiB", float64(allocated)/(1<<20))
}

// BenchRestoreHugeLine measures a restore refusing a file of a few
// megabytes holding one line of 3 GiB: the bytes it allocates (alloc-MiB)
// and the heap the process then holds (heap-MiB).
func BenchRestoreHugeLine(b *testing.B, open Opener) {
	for range b.N {
		allocated, err := restoreHugeLine(b, open, 3<<30)
		if err == nil {
			b.Fatal("a line of 3 GiB was restored")
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(allocated)/(1<<20), "alloc-MiB")
		b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-MiB")
	}
}

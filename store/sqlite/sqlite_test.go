package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/keyring"
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

// BenchmarkCommit2of10000 is storetest.BenchCommit2of10000.
func BenchmarkCommit2of10000(b *testing.B) { storetest.BenchCommit2of10000(b, open(b)) }

// BenchmarkChangesSince is storetest.BenchChangesSince. The store works in
// this process, so its CPU time per operation is steadier than wall time on
// a busy machine.
func BenchmarkChangesSince(b *testing.B) {
	storetest.BenchChangesSince(b, open(b), "cpu-ns/op", func() float64 { return float64(processCPU().Nanoseconds()) })
}

// BenchmarkBackupRestore is storetest.BenchBackupRestore: 10,000
// instances, 1,000 versions.
func BenchmarkBackupRestore(b *testing.B) {
	storetest.BenchBackupRestore(b, func(tb testing.TB) kilolock.Store { return open(tb) })
}

// BenchmarkPrune is storetest.BenchPrune: the cost of one pruned version.
func BenchmarkPrune(b *testing.B) { storetest.BenchPrune(b, open(b)) }

// TestAtRest runs the encryption-at-rest suite on a database file; its
// dump is the file and its WAL as they lie on disk.
func TestAtRest(t *testing.T) {
	storetest.RunAtRest(t, func(t testing.TB) storetest.AtRest {
		path := filepath.Join(t.TempDir(), "kilolock.db")
		return storetest.AtRest{
			Open: func(t testing.TB, ring *keyring.Ring) (kilolock.Store, error) {
				s, err := sqlite.Open(context.Background(), path, sqlite.WithKeyring(ring))
				if err == nil {
					t.Cleanup(func() { s.Close() })
				}
				return s, err
			},
			Dump: func(t testing.TB) []byte { return storetest.FileDump(t, path) },
		}
	})
}

// TestRestoreMemory is storetest.RunRestoreMemory (not in parallel: it
// reads the process's allocation counters).
func TestRestoreMemory(t *testing.T) {
	storetest.RunRestoreMemory(t, func(t testing.TB) kilolock.Store { return open(t) })
}

// BenchmarkRestoreHugeLine is storetest.BenchRestoreHugeLine: a line of 3
// GiB refused.
func BenchmarkRestoreHugeLine(b *testing.B) {
	storetest.BenchRestoreHugeLine(b, func(tb testing.TB) kilolock.Store { return open(tb) })
}

// BenchmarkInventory is storetest.BenchInventory (KL_BENCH_STATES and
// KL_BENCH_INSTANCES size the fleet; 1,000 x 1,000 by default).
func BenchmarkInventory(b *testing.B) { storetest.BenchInventory(b, open(b)) }

// BenchmarkCommitText is storetest.BenchCommitText.
func BenchmarkCommitText(b *testing.B) {
	s := open(b)
	storetest.BenchCommitText(b, s, processCPU, s.IndexText)
}

package postgres

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlite"
	"github.com/kilolock/kilolock/store/storetest"
)

// TestBackupAcrossStores runs the storetest Backup checks from SQLite into
// PostgreSQL and back: a team moves either way with all its history.
func TestBackupAcrossStores(t *testing.T) {
	pg := func(t testing.TB) kilolock.Store { return openStore(t) }
	lite := func(t testing.TB) kilolock.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kilolock.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("sqlite to postgres", func(t *testing.T) { storetest.RunBackup(t, lite, pg) })
	t.Run("postgres to sqlite", func(t *testing.T) { storetest.RunBackup(t, pg, lite) })
}

// TestRestoreMemory is storetest.RunRestoreMemory (not in parallel: it
// reads the process's allocation counters).
func TestRestoreMemory(t *testing.T) {
	storetest.RunRestoreMemory(t, func(t testing.TB) kilolock.Store { return openStore(t) })
}

// BenchmarkRestoreHugeLine is storetest.BenchRestoreHugeLine: a line of 3
// GiB refused.
func BenchmarkRestoreHugeLine(b *testing.B) {
	storetest.BenchRestoreHugeLine(b, func(tb testing.TB) kilolock.Store { return openStore(tb) })
}

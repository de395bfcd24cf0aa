package klcli

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestDatabaseGCPercent: a kl that opens a database itself collects
// garbage at databaseGCPercent, unless GOGC is set, which wins.
func TestDatabaseGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	gogc, had := os.LookupEnv("GOGC")
	os.Unsetenv("GOGC")
	if had {
		t.Cleanup(func() { os.Setenv("GOGC", gogc) })
	}
	open := func() {
		t.Helper()
		b, err := openDatabase(context.Background(), Target{Database: filepath.Join(t.TempDir(), "kl.db")})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	open()
	if p := debug.SetGCPercent(100); p != databaseGCPercent {
		t.Errorf("GC percent %d without GOGC, want %d", p, databaseGCPercent)
	}
	t.Setenv("GOGC", "100")
	open()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GC percent %d with GOGC=100, want GOGC's", p)
	}
}

package httpbackend

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlite"
)

// BenchmarkNew measures building a Handler the way kl --database does for
// every command (a registry of its own, a fixed version, so that neither
// the Go collectors nor the build information are read): a fixed cost of
// each command, paid before its first request, that the in-process lane
// adds to what the command reads.
func BenchmarkNew(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "kilolock.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	e := kilolock.NewEngine(st, kilolock.Options{})
	b.ReportAllocs()
	for b.Loop() {
		New(e, Options{QueryConcurrency: -1, Version: VersionInfo{Version: "in-process"}})
	}
}

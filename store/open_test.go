package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

func TestOpenSQLite(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs := filepath.Join(dir, "abs.db")
	tests := []struct {
		url  string
		file string // the database file the URL names
	}{
		{"sqlite://" + abs, abs},
		{"sqlite://relative.db", filepath.Join(dir, "relative.db")},
		{"file://" + filepath.Join(dir, "file-abs.db"), filepath.Join(dir, "file-abs.db")},
		{"file:file-relative.db", filepath.Join(dir, "file-relative.db")},
		{filepath.Join(dir, "plain.db"), filepath.Join(dir, "plain.db")},
		{"plain-relative.db", filepath.Join(dir, "plain-relative.db")},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			s, err := store.Open(t.Context(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(tt.file); err != nil {
				t.Errorf("no database file: %v", err)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, url := range []string{
		"",
		"mysql://user:secret@host/db",
		"sqlite://kilolock.db?_busy_timeout=1",
		"sqlite://",
		"file://otherhost/kilolock.db",
		":memory:",
	} {
		t.Run(url, func(t *testing.T) {
			s, err := store.Open(t.Context(), url)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, kilolock.ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// TestOpenLazyLockSync: a SQLite store opens with WithLazyLockSync; a
// PostgreSQL URL with it is refused before any connection, saying what to
// leave out.
func TestOpenLazyLockSync(t *testing.T) {
	s, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "lazy.db"), store.WithLazyLockSync())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = store.Open(t.Context(), "postgres://nobody@127.0.0.1:1/none", store.WithLazyLockSync())
	var inv *kilolock.InvalidError
	if !errors.As(err, &inv) || inv.Code != "invalid_store_option" || !strings.Contains(inv.Hint, "--sqlite-lazy-lock-sync") {
		t.Fatalf("a PostgreSQL store with lazy lock sync: %v, want invalid_store_option naming the flag", err)
	}
}

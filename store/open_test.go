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

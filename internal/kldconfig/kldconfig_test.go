package kldconfig

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

func parse(t *testing.T, args ...string) *Limits {
	t.Helper()
	var c struct {
		Limits Limits `embed:""`
	}
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return &c.Limits
}

func TestLimits(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		limits  kilolock.QueryLimits
		holders int
	}{
		{"defaults", nil, nil, kilolock.QueryLimits{Timeout: 30 * time.Second, MaxRows: 10000, MaxBytes: 8 << 20}, 100},
		{"flags", []string{"--query-timeout=5s", "--query-max-rows=10", "--query-max-bytes=1MiB", "--max-lock-holders=3"}, nil,
			kilolock.QueryLimits{Timeout: 5 * time.Second, MaxRows: 10, MaxBytes: 1 << 20}, 3},
		{"environment", nil, map[string]string{"KL_QUERY_MAX_BYTES": "64KiB", "KL_MAX_LOCK_HOLDERS": "0"},
			kilolock.QueryLimits{Timeout: 30 * time.Second, MaxRows: 10000, MaxBytes: 64 << 10}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o := parse(t, tt.args...).Engine(kilolock.Options{DefaultLockMode: kilolock.LockOptimistic})
			if o.QueryLimits != tt.limits || o.MaxLockHolders != tt.holders || o.DefaultLockMode != kilolock.LockOptimistic {
				t.Errorf("Engine = %+v, want limits %+v and holders %d", o, tt.limits, tt.holders)
			}
		})
	}
}

// A query URL is refused with a SQLite database, before it is opened.
func TestQueryURLNeedsPostgres(t *testing.T) {
	l := parse(t, "--query-database-url=postgres://reader@db/kilolock")
	path := filepath.Join(t.TempDir(), "kl.db")
	_, err := store.Open(context.Background(), path, l.StoreOptions()...)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "invalid_query_url" {
		t.Errorf("store.Open: %v, want invalid_query_url", err)
	}
	if len(parse(t).StoreOptions()) != 0 {
		t.Error("options without the flag")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://kl:secret@db/kilolock": "postgres://kl:xxxxx@db/kilolock",
		"postgres://kl@db/kilolock":        "postgres://kl@db/kilolock",
		"./kilolock.db":                    "./kilolock.db",
		"sqlite:///var/lib/kl/kilolock.db": "sqlite:///var/lib/kl/kilolock.db",
		"postgres://kl:s%40cret@db/kl?x=1": "postgres://kl:xxxxx@db/kl?x=1",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

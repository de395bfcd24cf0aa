// Package queries_test runs every query of the library in docs/queries on
// both stores, against the states in testdata, and checks each answer.
package queries_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// stores are the stores every query must answer alike on.
var stores = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "kilolock.db") }},
	{"postgres", func(t *testing.T) string { return testpg.URL(t) }},
}

// seed writes the known states through the engine, as the CLIs would:
// prod @1 (alice's apply) and @2 (bob's, adding aws_s3_bucket.scratch and
// changing aws_instance.web[1]), then staging @1 (carol's push). It
// returns the versions written, in that order.
func seed(t *testing.T, e *kilolock.Engine) []kilolock.Version {
	t.Helper()
	ctx := context.Background()
	var out []kilolock.Version
	for _, w := range []struct{ state, file, actor, lock string }{
		{"prod", "prod-1", "alice", "lock-1"},
		{"prod", "prod-2", "bob", "lock-2"},
		{"staging", "staging-1", "carol", ""},
	} {
		doc, err := os.ReadFile(filepath.Join("testdata", w.file+".tfstate"))
		if err != nil {
			t.Fatal(err)
		}
		if w.lock != "" {
			if _, err := e.Lock(ctx, w.state, kilolock.LockInfo{ID: w.lock, Operation: "OperationTypeApply", Who: w.actor}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := e.Write(ctx, w.state, doc, kilolock.WriteOptions{LockID: w.lock, Actor: w.actor})
		if err != nil {
			t.Fatalf("write %s: %v", w.file, err)
		}
		if w.lock != "" {
			if _, err := e.Unlock(ctx, w.state, w.lock, false); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, res.Version)
	}
	return out
}

// seedDrift records two drift checks, of prod @1 and of staging @1, and
// returns vs with a version-like record of each (its time in Created):
// prod's aws_instance.web[1] drifted and was changed by @2, which closes
// it; prod's aws_s3_bucket.logs is gone; staging's scratch bucket changed.
func seedDrift(t *testing.T, e *kilolock.Engine, vs []kilolock.Version) []kilolock.Version {
	t.Helper()
	for _, c := range []struct {
		state   string
		v       kilolock.Version
		drifted []drift.DriftedInstance
	}{
		{"prod", vs[0], []drift.DriftedInstance{{Address: "aws_instance.web[1]", Real: []byte(`{"id":"i-1"}`)}, {Address: "aws_s3_bucket.logs", Real: []byte(`null`)}}},
		{"staging", vs[2], []drift.DriftedInstance{{Address: "aws_s3_bucket.scratch", Real: []byte(`{"bucket":"acme-staging-scratch","acl":"public-read"}`)}}},
	} {
		check, err := drift.RecordDrift(context.Background(), e, c.state, &drift.DriftReport{Lineage: c.v.Lineage, Serial: c.v.Serial, Drifted: c.drifted}, kilolock.Caller{Actor: "ci"})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, kilolock.Version{Created: check.Checked})
	}
	return vs
}

// answers are what each query of the library answers for the states of
// seed, given the versions it wrote: its columns, then its rows.
func answers(v []kilolock.Version) map[string][][]any {
	at := func(i int) string { return v[i].Created.UTC().Format("2006-01-02T15:04:05.000000Z") }
	return map[string][][]any{
		"inventory_by_type": {
			{"type", "instances", "states"},
			{"aws_s3_bucket", 5, 2},
			{"aws_instance", 3, 2},
			{"aws_iam_role", 1, 1},
			{"aws_lb", 1, 1},
			{"aws_s3_bucket_server_side_encryption_configuration", 1, 1},
			{"aws_security_group", 1, 1},
		},
		"states_overview": {
			{"state", "version", "serial", "instances", "outputs", "last_source", "last_actor", "last_write"},
			{"prod", 2, 2, 12, 2, "apply", "bob", at(1)},
			{"staging", 1, 1, 3, 0, "push", "carol", at(2)},
		},
		"recent_writes": {
			{"state", "version", "serial", "source", "actor", "lock_id", "added", "changed", "removed", "created_at"},
			{"staging", 1, 1, "push", "carol", "", 3, 0, 0, at(2)},
			{"prod", 2, 2, "apply", "bob", "lock-2", 1, 1, 0, at(1)},
			{"prod", 1, 1, "apply", "alice", "lock-1", 11, 0, 0, at(0)},
		},
		"direct_dependencies": {
			{"relation", "address"},
			{"dependency", "aws_iam_role.app"},
			{"dependency", "aws_s3_bucket.assets"},
			{"dependency", "aws_security_group.web"},
			{"dependency", "data.aws_ami.ubuntu"},
			{"dependent", "aws_lb.front"},
		},
		"blast_radius": {
			{"address", "depth"},
			{"aws_instance.web[0]", 1},
			{"aws_instance.web[1]", 1},
			{"aws_lb.front", 2},
		},
		"orphaned_data_sources": {
			{"state", "address"},
			{"prod", "data.aws_caller_identity.current"},
			{"staging", "data.aws_region.current"},
		},
		"current_drift": {
			{"state", "address", "kind", "version", "checked_by", "checked_at"},
			{"prod", "aws_s3_bucket.logs", "deleted", 1, "ci", at(3)},
			{"staging", "aws_s3_bucket.scratch", "changed", 1, "ci", at(4)},
		},
		"s3_buckets_without_encryption": {
			{"state", "address", "bucket"},
			{"prod", "aws_s3_bucket.scratch", "acme-scratch"},
			{"prod", "module.storage.aws_s3_bucket.backups", "acme-backups"},
			{"staging", "aws_s3_bucket.scratch", "acme-staging-scratch"},
		},
	}
}

// library reads every .sql file of this directory: name → SQL.
func library(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.sql")
	if err != nil {
		t.Fatal(err)
	}
	lib := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lib[strings.TrimSuffix(f, ".sql")] = string(b)
	}
	return lib
}

// TestLibraryIsDocumented: every query opens with a comment saying what
// it answers, and the README lists it.
func TestLibraryIsDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, sql := range library(t) {
		header := 0
		for line := range strings.Lines(sql) {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header++
		}
		if header < 2 {
			t.Errorf("%s.sql: want a comment header of at least two lines saying what it answers", name)
		}
		if !strings.Contains(string(readme), "("+name+".sql)") {
			t.Errorf("README.md does not link %s.sql", name)
		}
	}
}

// TestLibrary runs every query through Store.Query, as kl query and the
// query route do (the views only, read-only), on both stores, and checks
// its answer exactly.
func TestLibrary(t *testing.T) {
	lib := library(t)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, s.url(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := kilolock.NewEngine(st, kilolock.Options{})
			want := answers(seedDrift(t, e, seed(t, e)))
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range lib {
					if !yield(n) {
						return
					}
				}
			})
			for n := range want {
				if _, ok := lib[n]; !ok {
					t.Errorf("no %s.sql for the answer expected of it", n)
				}
			}
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					w, ok := want[name]
					if !ok {
						t.Fatalf("%s.sql has no expected answer in this test", name)
					}
					res, err := st.Query(ctx, kilolock.QueryLimits{Timeout: time.Minute}, lib[name])
					if err != nil {
						t.Fatalf("query: %v", err)
					}
					if got := columns(res.Columns); !reflect.DeepEqual(got, w[0]) {
						t.Errorf("columns %v, want %v", got, w[0])
					}
					if got, exp := rows(res.Rows), rows(w[1:]); !reflect.DeepEqual(got, exp) {
						t.Errorf("rows:\n got %s\nwant %s", show(got), show(exp))
					}
				})
			}
		})
	}
}

func columns(cs []string) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// rows gives every whole number one type, so that an expected 1 is the
// int64 a store answers.
func rows(rs [][]any) [][]any {
	out := make([][]any, len(rs))
	for i, r := range rs {
		out[i] = make([]any, len(r))
		for j, v := range r {
			if n, ok := v.(int); ok {
				v = int64(n)
			}
			out[i][j] = v
		}
	}
	return out
}

func show(rs [][]any) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  %#v", r)
	}
	return b.String()
}

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// openStore opens a Store on a fresh database, closed when tb ends.
func openStore(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	return openURL(tb, testpg.URL(tb), opts...)
}

// openURL opens another Store on the database at url: another pool, as
// another kld replica would have.
func openURL(tb testing.TB, url string, opts ...Option) *Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(ctx, url, opts...)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// instance builds a terraform_data instance like Terraform writes it.
func instance(tb testing.TB, name string, key any, input string, deps ...string) kilolock.Instance {
	tb.Helper()
	obj := map[string]any{
		"schema_version":       0,
		"attributes":           map[string]any{"id": name, "input": input, "output": nil, "triggers_replace": nil},
		"sensitive_attributes": []any{},
	}
	if key != nil {
		obj["index_key"] = key
	}
	if len(deps) > 0 {
		obj["dependencies"] = deps
	}
	b, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	r := graph.Resource{Mode: "managed", Type: "terraform_data", Name: name, Provider: `provider["terraform.io/builtin/terraform"]`}
	if key != nil {
		if _, ok := key.(string); ok {
			r.Each = "map"
		} else {
			r.Each = "list"
		}
	}
	in, err := graph.NewInstance(r, b)
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

func output(name string, value any, sensitive bool) kilolock.Output {
	b, _ := json.Marshal(map[string]any{"value": value, "type": "string", "sensitive": sensitive})
	return graph.NewOutput(name, b)
}

// commit builds a commit onto parent with serial parent+1.
func commit(parent int64, upserts ...kilolock.Instance) *kilolock.Commit {
	return &kilolock.Commit{
		Parent:  parent,
		Upserts: upserts,
		Version: kilolock.Version{
			Serial: uint64(parent + 1), Lineage: "lin-1", TerraformVersion: "1.9.0",
			Source: kilolock.SourceApply, Actor: "alice", Format: "indent",
		},
	}
}

func lockInfo(id string) kilolock.LockInfo {
	return kilolock.LockInfo{ID: id, Operation: "OperationTypeApply", Who: "alice@" + id, Version: "1.9.0", Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
}

// mustCommit commits c and fails tb on error.
func mustCommit(tb testing.TB, s *Store, name string, c *kilolock.Commit) (*kilolock.Version, kilolock.WriteStats) {
	tb.Helper()
	v, ws, err := s.Commit(context.Background(), name, c)
	if err != nil {
		tb.Fatalf("commit onto %d: %v", c.Parent, err)
	}
	return v, ws
}

// bigAttributes is about n bytes of attribute text.
func bigAttributes(i, n int) string {
	return fmt.Sprintf("%06d:", i) + strings.Repeat("x", n-7)
}

// Package enginetest is what the tests of the root package and of the
// feature packages (history, drift, retention, tenancy) share: an engine's
// store on SQLite and on PostgreSQL, small states written as the CLIs write
// them, and reads that fail the test.
//
// A test package that runs on PostgreSQL (EachStore) starts its throwaway
// cluster with testpg: func TestMain(m *testing.M) { testpg.Main(m) }.
package enginetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
	"github.com/kilolock/kilolock/tenancy"
)

// OpenSQLite opens a store in a fresh temp dir, and returns its path
// (RawVersions knows it).
func OpenSQLite(tb testing.TB) (kilolock.Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "kilolock.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	storeURLs.Store(kilolock.Store(st), path)
	return st, path
}

// SQLiteEngine is an engine with default options over OpenSQLite's store.
func SQLiteEngine(tb testing.TB) *kilolock.Engine {
	tb.Helper()
	st, _ := OpenSQLite(tb)
	return kilolock.NewEngine(st, kilolock.Options{})
}

// EachStore runs f on a fresh SQLite store and a fresh PostgreSQL database.
func EachStore[T testing.TB](tb T, run func(T, string, func(testing.TB) kilolock.Store) bool) {
	run(tb, "sqlite", func(tb testing.TB) kilolock.Store {
		st, _ := OpenSQLite(tb)
		return st
	})
	run(tb, "postgres", func(tb testing.TB) kilolock.Store {
		url := testpg.URL(tb)
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			tb.Fatalf("open postgres: %v", err)
		}
		tb.Cleanup(func() { st.Close() })
		storeURLs.Store(kilolock.Store(st), url)
		return st
	})
}

// storeURLs maps the stores OpenSQLite and EachStore opened to their
// database.
var storeURLs sync.Map

// RawVersions counts the rows of version_raw, which users' queries may not
// read: on the database of st, a store OpenSQLite or EachStore opened.
func RawVersions(tb testing.TB, st kilolock.Store) int64 {
	tb.Helper()
	url, ok := storeURLs.Load(st)
	if !ok {
		tb.Fatalf("no database known for %T", st)
	}
	driver := "sqlite"
	if _, ok := st.(*postgres.Store); ok {
		driver = "pgx"
	}
	db, err := sql.Open(driver, url.(string))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	var c int64
	if err := db.QueryRow("SELECT COUNT(*) FROM version_raw").Scan(&c); err != nil {
		tb.Fatalf("count version_raw: %v", err)
	}
	return c
}

// TFState writes a small state the way OpenTofu does (compact=true) or
// Terraform does (json.MarshalIndent with two spaces and a newline);
// OpenTofu's layout is compact with a newline: one
// terraform_data resource with count = len(values).
func TFState(tb testing.TB, compact bool, serial int, lineage string, values ...string) []byte {
	tb.Helper()
	type instance struct {
		IndexKey            int             `json:"index_key"`
		SchemaVersion       int             `json:"schema_version"`
		Attributes          json.RawMessage `json:"attributes"`
		SensitiveAttributes []any           `json:"sensitive_attributes"`
	}
	type resource struct {
		Mode      string     `json:"mode"`
		Type      string     `json:"type"`
		Name      string     `json:"name"`
		Provider  string     `json:"provider"`
		Instances []instance `json:"instances"`
	}
	type state struct {
		Version          int             `json:"version"`
		TerraformVersion string          `json:"terraform_version"`
		Serial           int             `json:"serial"`
		Lineage          string          `json:"lineage"`
		Outputs          map[string]any  `json:"outputs"`
		Resources        []resource      `json:"resources"`
		CheckResults     json.RawMessage `json:"check_results"`
	}
	r := resource{Mode: "managed", Type: "terraform_data", Name: "item", Provider: `provider["terraform.io/builtin/terraform"]`, Instances: []instance{}}
	for i, v := range values {
		attrs, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("id-%d", i), "input": map[string]any{"value": v, "type": "string"}, "output": nil, "triggers_replace": nil})
		r.Instances = append(r.Instances, instance{IndexKey: i, Attributes: attrs, SensitiveAttributes: []any{}})
	}
	s := state{Version: 4, TerraformVersion: "1.10.10", Serial: serial, Lineage: lineage,
		Outputs:   map[string]any{"count": map[string]any{"value": len(values), "type": "number"}},
		Resources: []resource{r}, CheckResults: json.RawMessage("null")}
	if compact {
		b, err := json.Marshal(s)
		if err != nil {
			tb.Fatal(err)
		}
		return append(b, '\n')
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return append(b, '\n')
}

// ThreeVersions writes @1 (a, b), @2 (a, B, c) and @3 (A, B, c, d).
func ThreeVersions(t testing.TB, e *kilolock.Engine, name string) {
	Write(t, e, name, TFState(t, true, 1, "L", "a", "b"))
	Write(t, e, name, TFState(t, true, 2, "L", "a", "B", "c"))
	Write(t, e, name, TFState(t, true, 3, "L", "A", "B", "c", "d"))
}

// MustRef parses a version reference.
func MustRef(t testing.TB, s string) kilolock.VersionRef {
	t.Helper()
	r, err := kilolock.ParseVersionRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Write writes doc to state name as a client's POST without a lock.
func Write(t testing.TB, e *kilolock.Engine, name string, doc []byte) *kilolock.WriteResult {
	t.Helper()
	res, err := e.Write(context.Background(), name, doc, kilolock.WriteOptions{})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	return res
}

// MustRead reads the bytes a GET of state name serves.
func MustRead(t testing.TB, e *kilolock.Engine, name string) []byte {
	t.Helper()
	d, err := e.Read(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return d.Bytes
}

// ReadGraph parses what a GET of state name serves.
func ReadGraph(t testing.TB, e *kilolock.Engine, name string) *graph.State {
	t.Helper()
	b := MustRead(t, e, name)
	g, err := graph.Parse(b)
	if err != nil {
		t.Fatalf("the served state does not parse: %v\n%s", err, b)
	}
	return g
}

// Addresses are the instance IDs of g, in its order.
func Addresses(g *graph.State) []string {
	var out []string
	for i := range g.Instances {
		out = append(out, g.Instances[i].ID())
	}
	return out
}

// NewControl returns a Control on a fresh store opened by open, and the
// store.
func NewControl(t *testing.T, open func(testing.TB) kilolock.Store) (*tenancy.Control, tenancy.TenantStore) {
	t.Helper()
	ts, ok := open(t).(tenancy.TenantStore)
	if !ok {
		t.Fatal("the store is no TenantStore")
	}
	return tenancy.NewControl(ts), ts
}

// AuditLog returns the audit log oldest first, as "action target" lines.
func AuditLog(t *testing.T, c *tenancy.Control) ([]kilolock.AuditEntry, []string) {
	t.Helper()
	es, err := c.Audit(context.Background(), kilolock.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(es)
	var lines []string
	for _, e := range es {
		lines = append(lines, e.Action+" "+e.Target)
	}
	return es, lines
}

// Changed returns the two instance positions version i of an n-instance
// state changes: spread over the state so no two neighbouring versions
// touch the same instances.
func Changed(i, n int) []int {
	a, b := (i*7919)%n, (i*104729+n/2)%n
	if a == b { // i = 50 (mod 100) for n = 1,000: change a neighbour instead
		b = (b + 1) % n
	}
	return []int{a, b}
}

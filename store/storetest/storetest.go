package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// MaxQueryRows is how many rows Store.Query returns at most.
const MaxQueryRows = 10_000

// Opener opens an empty store for one group of tests; it registers its own
// cleanup with t.Cleanup.
type Opener = func(t testing.TB) kilolock.Store

// Run runs the conformance suite against the stores open opens.
func Run(t *testing.T, open Opener) {
	groups := []struct {
		name string
		run  func(t *testing.T, open Opener)
	}{
		{"Lock", testLock},
		{"Commit", testCommit},
		{"Snapshot", testSnapshot},
		{"Spellings", testSpellings},
		{"History", testHistory},
		{"Delete", testDelete},
		{"Query", testQuery},
		{"Concurrency", testConcurrency},
		{"WriteStats", testWriteStats},
		{"Changes", testChanges},
		{"Rejections", testRejections},
		{"CurrentVersion", testCurrentVersion},
		{"Lookups", testLookups},
		{"Tenant", testTenant},
		{"TrustPolicies", testTrustPolicies},
		{"Access", testAccess},
		{"PlanLocks", testPlanLocks},
		{"NoCreateLocks", testNoCreateLocks},
		{"PlanLockLimit", testPlanLockLimit},
		{"Runs", testRuns},
		{"Quotas", testQuotas},
		{"OddBytes", testOddBytes},
		{"QuerySafety", testQuerySafety},
		{"Tags", testTags},
		{"Drift", testDrift},
		{"TenantQueries", testTenantQueries},
		{"TenantQueryLeaks", testTenantQueryLeaks},
		{"Backup", testBackup},
		{"BackupUnderWrites", testBackupUnderWrites},
		{"Retention", testRetention},
		{"ClientEncryption", testClientEncryption},
		{"Move", testMove},
		{"Inventory", testInventory},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) { g.run(t, open) })
	}
}

// lineage is the lineage of the suite's states.
const lineage = "9a9ad1c6-3b0e-4b1f-8a6e-6d7c2f1e0a01"

// cmpOpts compare what stores return: instances without their parse-time
// fields, nil and empty slices alike.
var cmpOpts = []cmp.Option{
	cmpopts.IgnoreUnexported(graph.Instance{}),
	cmpopts.EquateEmpty(),
}

// lockInfo is the lock document Terraform sends, for lock id.
func lockInfo(id, who string) kilolock.LockInfo {
	return kilolock.LockInfo{
		ID:        id,
		Operation: "OperationTypeApply",
		Who:       who + "@host",
		Version:   "1.9.0",
		Created:   time.Date(2026, 5, 1, 12, 30, 45, 123456789, time.UTC),
		Path:      "",
		Info:      "storetest",
	}
}

// resource returns a root-module managed resource of type typ.
func resource(typ, name string) graph.Resource {
	return graph.Resource{Mode: "managed", Type: typ, Name: name, Provider: `provider["registry.opentofu.org/hashicorp/` + strings.SplitN(typ, "_", 2)[0] + `"]`}
}

// object builds a compact instance object the way OpenTofu writes one.
func object(key graph.IndexKey, status, deposed, attrs string, deps []string) []byte {
	var b strings.Builder
	b.WriteByte('{')
	if key.Kind != graph.NoKey {
		b.WriteString(`"index_key":` + key.JSON() + `,`)
	}
	if status != "" {
		b.WriteString(`"status":` + quote(status) + `,`)
	}
	if deposed != "" {
		b.WriteString(`"deposed":` + quote(deposed) + `,`)
	}
	b.WriteString(`"schema_version":0,"attributes":` + attrs + `,"sensitive_attributes":[]`)
	if len(deps) > 0 {
		d, _ := json.Marshal(deps)
		b.WriteString(`,"dependencies":` + string(d))
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// instance builds an instance of r with graph.NewInstance.
func instance(t testing.TB, r graph.Resource, key graph.IndexKey, attrs string, deps ...string) graph.Instance {
	t.Helper()
	return newInstance(t, r, object(key, "", "", attrs, deps))
}

func newInstance(t testing.TB, r graph.Resource, obj []byte) graph.Instance {
	t.Helper()
	inst, err := graph.NewInstance(r, obj)
	if err != nil {
		t.Fatalf("graph.NewInstance(%s): %v", obj, err)
	}
	return inst
}

func intKey(i int64) graph.IndexKey  { return graph.IndexKey{Kind: graph.IntKey, Int: i} }
func strKey(s string) graph.IndexKey { return graph.IndexKey{Kind: graph.StringKey, Str: s} }
func output(name, value string, sensitive bool) graph.Output {
	return graph.NewOutput(name, []byte(fmt.Sprintf(`{"value":%s,"type":"string","sensitive":%t}`, quote(value), sensitive)))
}

// next returns a commit onto the current version of state name (or onto
// nothing when it does not exist), with the next serial.
func next(t testing.TB, s kilolock.Store, name string) *kilolock.Commit {
	t.Helper()
	c := &kilolock.Commit{Version: kilolock.Version{
		Serial: 1, Lineage: lineage, TerraformVersion: "1.9.0",
		Source: kilolock.SourcePush, Actor: "storetest", Format: "compact",
	}}
	st, err := s.State(context.Background(), name)
	switch {
	case errors.Is(err, kilolock.ErrNotFound):
	case err != nil:
		t.Fatalf("State(%q): %v", name, err)
	default:
		c.Parent = st.Current
		c.Version.Serial = st.Serial + 1
	}
	return c
}

// commit commits c and fails the test when the store refuses it.
func commit(t testing.TB, s kilolock.Store, name string, c *kilolock.Commit) *kilolock.Version {
	t.Helper()
	v, _, err := s.Commit(context.Background(), name, c)
	if err != nil {
		t.Fatalf("Commit(%q, parent %d): %v", name, c.Parent, err)
	}
	return v
}

// state returns the state called name.
func state(t testing.TB, s kilolock.Store, name string) *kilolock.State {
	t.Helper()
	st, err := s.State(context.Background(), name)
	if err != nil {
		t.Fatalf("State(%q): %v", name, err)
	}
	return st
}

// lock takes lock id on name and fails the test when it is refused.
func lock(t testing.TB, s kilolock.Store, name, id string, mode kilolock.LockMode) *kilolock.Lock {
	t.Helper()
	l, err := s.Lock(context.Background(), name, lockInfo(id, id), kilolock.LockOptions{Mode: mode})
	if err != nil {
		t.Fatalf("Lock(%q, %q): %v", name, id, err)
	}
	return l
}

// errorAs asserts that err is a *E and returns it.
func errorAs[E error](t testing.TB, err error) E {
	t.Helper()
	var e E
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a %T", err, err, e)
	}
	return e
}

// errorIs asserts errors.Is(err, target).
func errorIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v (%T) is not %v", err, err, target)
	}
}

// frozen is what a refused write must leave as it was.
type frozen struct {
	state    *kilolock.State
	history  []kilolock.Version
	snapshot *kilolock.Snapshot
}

// freeze records the state called name, its history and current snapshot.
func freeze(t testing.TB, s kilolock.Store, name string) frozen {
	t.Helper()
	ctx := context.Background()
	var f frozen
	var err error
	f.state, err = s.State(ctx, name)
	if errors.Is(err, kilolock.ErrNotFound) {
		return f
	}
	if err != nil {
		t.Fatalf("State(%q): %v", name, err)
	}
	if f.history, err = s.History(ctx, name, kilolock.HistoryOptions{Limit: 1000}); err != nil {
		t.Fatalf("History(%q): %v", name, err)
	}
	if f.state.Current > 0 {
		if f.snapshot, err = s.Snapshot(ctx, name, f.state.Current); err != nil {
			t.Fatalf("Snapshot(%q, %d): %v", name, f.state.Current, err)
		}
	}
	return f
}

// unchanged asserts that the state called name is as freeze found it.
func (f frozen) unchanged(t testing.TB, s kilolock.Store, name string) {
	t.Helper()
	if diff := cmp.Diff(f, freeze(t, s, name), append(cmpOpts, cmp.AllowUnexported(frozen{}))...); diff != "" {
		t.Errorf("state %q changed (-before +after):\n%s", name, diff)
	}
}

package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/tenancy"
)

// HostileQueries are statements a tenant may send to reach beyond its
// states: base tables and catalogs, files and programs, ATTACH, recursive
// CTEs, every kind of write, settings, roles and the scope itself. Each
// must answer only the tenant's own rows, or a refusal.
var HostileQueries = append([]string{
	`SELECT * FROM resources`,
	`SELECT state, address, attributes FROM resources WHERE state NOT LIKE 'ws_a.%'`,
	`SELECT * FROM main.resources`,
	`SELECT * FROM public.resources`,
	`SELECT * FROM temp.resources`,
	`SELECT * FROM kl_t_resources`,
	`SELECT * FROM kl_t_scope`,
	`SELECT * FROM states`,
	`SELECT * FROM public.states`,
	`SELECT * FROM public.payloads`,
	`SELECT * FROM public.tokens`,
	`SELECT * FROM public.kl_query_scopes`,
	`SELECT * FROM public.version_history`,
	`SELECT * FROM kl_tenant.resources`,
	`SELECT name FROM states WHERE name LIKE 'ws_b%'`,
	`SELECT * FROM instance_intervals`,
	`SELECT count(*) FROM instance_intervals`,
	`SELECT body FROM payloads`,
	`SELECT * FROM tokens`,
	`SELECT * FROM audit_log`,
	`SELECT * FROM kl_settings`,
	`SELECT * FROM kl_query_scopes`,
	`SELECT * FROM state_tags`,
	`SELECT * FROM drift_records`,
	`SELECT r.address, s.name FROM resources r JOIN states s ON s.name <> r.state`,
	`SELECT * FROM resources r, outputs o, version_history v, resource_history h, rejected_commit_history c, resource_drift d`,
	`SELECT address FROM resources WHERE EXISTS (SELECT 1 FROM payloads WHERE body LIKE '%secret%')`,
	`WITH RECURSIVE x(n) AS (SELECT state FROM version_history UNION SELECT n || '!' FROM x WHERE length(n) < 40) SELECT * FROM x`,
	`WITH RECURSIVE s(name) AS (SELECT name FROM states) SELECT * FROM s`,
	`SELECT 1 FROM resources WHERE CAST(attributes ->> 'id' AS integer) > 0`,
	`SELECT * FROM resources WHERE attributes ->> 'id' = 'secret-b'`,
	`SELECT * FROM sqlite_master`,
	`SELECT * FROM temp.sqlite_master`,
	`SELECT * FROM pg_catalog.pg_class`,
	`SELECT query FROM pg_stat_activity`,
	`SELECT * FROM pg_stats`,
	`SELECT pg_read_file('/etc/passwd')`,
	`SELECT * FROM pg_ls_dir('.')`,
	`SELECT lo_import('/etc/passwd')`,
	`COPY (SELECT 1) TO PROGRAM 'id'`,
	`COPY states TO STDOUT`,
	`ATTACH DATABASE ':memory:' AS x`,
	`ATTACH DATABASE 'kilolock.db' AS again`,
	`SELECT load_extension('x')`,
	`VACUUM INTO '/tmp/kl-copy.db'`,
	`PRAGMA writable_schema = 1`,
	`PRAGMA table_info(tokens)`,
	`INSERT INTO resources (state) VALUES ('x')`,
	`INSERT INTO kl_t_scope VALUES ('ws_b.env_b.')`,
	`INSERT INTO temp.kl_t_scope VALUES ('')`,
	`INSERT INTO kl_query_scopes VALUES (pg_backend_pid(), 'x', '', now())`,
	`UPDATE states SET name = 'x'`,
	`UPDATE temp.kl_t_scope SET prefix = ''`,
	`DELETE FROM states`,
	`DELETE FROM temp.kl_t_scope`,
	`DROP VIEW resources`,
	`DROP VIEW temp.resources`,
	`CREATE TEMP VIEW resources AS SELECT * FROM main.resources`,
	`CREATE TEMP VIEW kl_t_x AS SELECT * FROM states`,
	`CREATE TABLE x (a int)`,
	`CREATE TEMP TABLE x AS SELECT * FROM states`,
	`SELECT set_config('kl.query_nonce', 'guess', false), (SELECT count(*) FROM resources)`,
	`SELECT set_config('search_path', 'public', true), (SELECT count(*) FROM resources)`,
	`SELECT set_config('role', 'postgres', true)`,
	`SET ROLE postgres`,
	`RESET ROLE`,
	`SET SESSION AUTHORIZATION postgres`,
	`SELECT current_setting('kl.query_nonce', true)`,
	`DO $$BEGIN EXECUTE 'SELECT * FROM states'; END$$`,
	`LOCK TABLE states`,
	`NOTIFY kl, 'x'`,
	`BEGIN; SELECT * FROM states`,
	`COMMIT`,
}, LeakProbes...) // and the probe's reads through error messages

// forbidden are what a tenant of ws_a.env_a must never see of others: the
// other tenant's names and secrets, the local lane's, and token hashes.
var forbidden = []string{"ws_b", "env_b", "secret-b", "plain", "secret-plain", "out-b"}

// testTenantQueries: a scoped query sees only the states of its scope in
// every view, whatever its SQL tries; the operator's unscoped Query still
// sees everything.
func testTenantQueries(t *testing.T, open Opener) {
	ctx := context.Background()
	s, sq := openScoped(t, open)
	SeedTenants(t, s)
	before := freeze(t, s, "ws_b.env_b.net")

	scopeA := tenancy.QueryScope{Prefixes: []string{"ws_a.env_a."}}
	for _, r := range tenancy.TenantQueryRelations {
		res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{}, scopeA, `SELECT DISTINCT state FROM `+r)
		if err != nil {
			t.Fatalf("SELECT state FROM %s: %v", r, err)
		}
		for _, row := range res.Rows {
			if row[0] != "ws_a.env_a.net" {
				t.Errorf("%s shows state %v to ws_a.env_a", r, row[0])
			}
		}
		if r != "resource_dependencies" && len(res.Rows) != 1 {
			t.Errorf("%s shows %d states to ws_a.env_a, want its own", r, len(res.Rows))
		}
	}
	count := func(scope tenancy.QueryScope) int64 {
		t.Helper()
		res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{}, scope, `SELECT count(*) FROM resources`)
		if err != nil {
			t.Fatal(err)
		}
		return asInt(t, res.Rows[0][0])
	}
	if n := count(scopeA); n != 1 {
		t.Errorf("count(*) of ws_a.env_a's resources = %d, want 1", n)
	}
	if n := count(tenancy.QueryScope{Prefixes: []string{"ws_a.env_a.", "ws_b.env_b."}}); n != 2 {
		t.Errorf("two environments' resources = %d, want 2", n)
	}
	if n := count(tenancy.QueryScope{}); n != 0 {
		t.Errorf("an empty scope sees %d resources", n)
	}
	if res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT count(*) FROM resources`); err != nil || asInt(t, res.Rows[0][0]) != 3 {
		t.Errorf("the operator's query: %v, %v; want all 3", res, err)
	}
	for _, q := range HostileQueries {
		res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{}, scopeA, q)
		if err := CheckTenantAnswer(res, err); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	// The limits hold as for the operator's queries.
	if _, err := sq.QueryScoped(ctx, kilolock.QueryLimits{Timeout: 200 * time.Millisecond}, scopeA,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`); errorAs[*kilolock.InvalidError](t, err).Code != "query_timeout" {
		t.Errorf("an endless tenant query: %v", err)
	}
	if _, err := sq.QueryScoped(ctx, kilolock.QueryLimits{MaxBytes: 1 << 10}, scopeA, `SELECT $1 AS pad`, strings.Repeat("x", 4<<10)); errorAs[*kilolock.InvalidError](t, err).Code != "query_too_large" {
		t.Errorf("a tenant answer past the byte cap: %v", err)
	}
	if res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{MaxRows: 2}, scopeA, `SELECT * FROM version_history, resources, outputs, resource_history`); err != nil || len(res.Rows) > 2 {
		t.Errorf("a tenant answer past the row cap: %v, %v", res, err)
	}
	// An object past the byte cap fails only the statements that read it.
	big := next(t, s, "ws_a.env_a.big")
	big.Upserts = append(big.Upserts, instance(t, resource("aws_instance", "big"), intKey(0), `{"id":"i-big","pad":`+quote(strings.Repeat("x", 8<<10))+`}`),
		instance(t, resource("aws_instance", "small"), intKey(0), `{"id":"i-small"}`))
	commit(t, s, "ws_a.env_a.big", big)
	small := `SELECT attributes ->> 'id' FROM resources WHERE address = 'aws_instance.small[0]'`
	if res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{MaxBytes: 4 << 10}, scopeA, small); err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "i-small" {
		t.Errorf("a small object beside one past the byte cap: %v, %v", res, err)
	}
	if _, err := sq.QueryScoped(ctx, kilolock.QueryLimits{MaxBytes: 4 << 10}, scopeA, `SELECT attributes FROM resources WHERE address = 'aws_instance.big[0]'`); errorAs[*kilolock.InvalidError](t, err).Code != "query_too_large" {
		t.Errorf("an object past the byte cap: %v", err)
	}
	if _, err := s.Delete(ctx, "ws_a.env_a.big", kilolock.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	// A refused statement left the connection clean for the next one.
	if n := count(scopeA); n != 1 {
		t.Errorf("after the battery ws_a.env_a counts %d resources", n)
	}
	// Not even how many rows a table holds, nor how large the file is.
	for _, q := range []string{
		`SELECT count(*) FROM tokens`, `SELECT count(*) FROM states`, `SELECT count(*) FROM instance_intervals`,
		`SELECT count(*) FROM payloads`, `SELECT count(*) FROM main.states`, `SELECT count(*) FROM main.resources`,
		`SELECT (WITH tokens AS (SELECT 1) SELECT count(*) FROM tokens), (SELECT count(*) FROM tokens)`,
		`SELECT count(*) FROM kl_t_states`, `SELECT count(*) FROM temp.kl_t_copies`,
	} {
		res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{}, scopeA, q)
		if err == nil && asInt(t, res.Rows[0][len(res.Rows[0])-1]) != 0 {
			t.Errorf("%s counts %v for ws_a.env_a", q, res.Rows[0])
		}
	}
	for _, q := range []string{`SELECT count(*) FROM dbstat`, `SELECT * FROM pragma_page_count`, `PRAGMA page_count`, `PRAGMA data_version`, `SELECT * FROM sqlite_dbpage`} {
		if res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{}, scopeA, q); err == nil {
			t.Errorf("%s answers ws_a.env_a: %v", q, res.Rows)
		}
	}
	testScopesTakeTurns(t, s, sq)
	before.unchanged(t, s, "ws_b.env_b.net")
}

// testScopesTakeTurns: scopes that take turns on the store's connections
// each see their own rows, whichever columns they read, and the rows as
// they are at the time of the query.
func testScopesTakeTurns(t *testing.T, s kilolock.Store, sq tenancy.ScopedQuerier) {
	ctx := context.Background()
	scopeA := tenancy.QueryScope{Prefixes: []string{"ws_a.env_a."}}
	scopeB := tenancy.QueryScope{Prefixes: []string{"ws_b.env_b."}}
	ask := func(scope tenancy.QueryScope, q string) [][]any {
		t.Helper()
		res, err := sq.QueryScoped(ctx, kilolock.QueryLimits{}, scope, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res.Rows
	}
	for i := range 6 {
		scope, want, id := scopeA, "ws_a.env_a.net", "i-a"
		if i%2 == 1 {
			scope, want, id = scopeB, "ws_b.env_b.net", "secret-b"
		}
		if rows := ask(scope, `SELECT DISTINCT state FROM resources`); len(rows) != 1 || rows[0][0] != want {
			t.Errorf("turn %d: %s sees states %v", i, want, rows)
		}
		if rows := ask(scope, `SELECT address FROM resources`); len(rows) != 1 || rows[0][0] != "aws_instance.web[0]" {
			t.Errorf("turn %d: %s sees addresses %v", i, want, rows)
		}
		// A column the last statement did not read.
		if rows := ask(scope, `SELECT attributes ->> 'id', address FROM resources`); len(rows) != 1 || rows[0][0] != id {
			t.Errorf("turn %d: %s sees ids %v, want %s", i, want, rows, id)
		}
		if rows := ask(scope, `SELECT state, name FROM outputs`); len(rows) != 1 || rows[0][0] != want {
			t.Errorf("turn %d: %s sees outputs %v", i, want, rows)
		}
	}
	// What users write: CTEs, joins, subqueries, over the views.
	for _, q := range []string{
		`WITH r AS (SELECT state, address FROM resources) SELECT count(*) FROM r WHERE state = 'ws_a.env_a.net'`,
		`WITH r AS (SELECT state FROM resources), n AS (SELECT count(*) AS c FROM r) SELECT c FROM n`,
		`SELECT count(*) FROM resources r JOIN version_history v ON v.state = r.state WHERE v.number = 1`,
		`SELECT (SELECT count(*) FROM outputs) * (SELECT count(*) FROM resources WHERE address IN (SELECT address FROM resource_history))`,
	} {
		if rows := ask(scopeA, q); len(rows) != 1 || asInt(t, rows[0][0]) != 1 {
			t.Errorf("%s = %v, want 1", q, rows)
		}
	}
	// A write between two queries of one scope shows in the second.
	c := next(t, s, "ws_a.env_a.net")
	c.Upserts = append(c.Upserts, instance(t, resource("aws_instance", "db"), intKey(0), `{"id":"i-a-db"}`))
	commit(t, s, "ws_a.env_a.net", c)
	if rows := ask(scopeA, `SELECT count(*) FROM resources`); asInt(t, rows[0][0]) != 2 {
		t.Errorf("after a write ws_a.env_a counts %v resources, want 2", rows)
	}
	if rows := ask(scopeA, `SELECT attributes ->> 'id' FROM resources WHERE address = 'aws_instance.db[0]'`); len(rows) != 1 || rows[0][0] != "i-a-db" {
		t.Errorf("after a write ws_a.env_a reads %v", rows)
	}
}

// openScoped opens a store that runs tenants' queries, or skips t.
func openScoped(t *testing.T, open Opener) (kilolock.Store, tenancy.ScopedQuerier) {
	t.Helper()
	s := open(t)
	sq, ok := s.(tenancy.ScopedQuerier)
	if !ok {
		t.Skip("the store runs no scoped queries")
	}
	return s, sq
}

// CheckTenantAnswer is nil when a tenant of ws_a.env_a got a refusal or an
// answer that holds nothing of another tenant (see SeedTenants).
func CheckTenantAnswer(res *kilolock.QueryResult, err error) error {
	if err != nil {
		if !errors.Is(err, kilolock.ErrReadOnly) && !errors.Is(err, kilolock.ErrInvalid) && !errors.Is(err, kilolock.ErrRefused) {
			return errors.New("not a refusal: " + err.Error())
		}
		for _, f := range forbidden {
			if (f == "plain" && plainState.MatchString(err.Error())) || (f != "plain" && strings.Contains(err.Error(), f)) {
				return errors.New("the refusal holds " + f + ": " + clipText(err.Error()))
			}
		}
		return nil
	}
	b, jerr := json.Marshal(res)
	if jerr != nil {
		return jerr
	}
	for _, f := range forbidden {
		if strings.Contains(string(b), f) {
			return errors.New("the answer holds " + f + ": " + clipText(string(b)))
		}
	}
	return nil
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// SeedTenants writes the states of two tenants, ws_a.env_a.net and
// ws_b.env_b.net, and a local one, plain, each with an instance, an
// output, a rejected commit and a drift record, and a token.
func SeedTenants(t testing.TB, s kilolock.Store) {
	t.Helper()
	ctx := context.Background()
	for _, st := range []struct{ name, secret string }{
		{"ws_a.env_a.net", "i-a"}, {"ws_b.env_b.net", "secret-b"}, {"plain", "secret-plain"},
	} {
		c := next(t, s, st.name)
		in := instance(t, resource("aws_instance", "web"), intKey(0), `{"id":`+quote(st.secret)+`}`)
		c.Upserts = append(c.Upserts, in)
		c.OutputUpserts = append(c.OutputUpserts, output("ip", "out-"+strings.TrimPrefix(st.secret, "secret-"), false))
		commit(t, s, st.name, c)
		record(t, s, st.name, rejection("l-"+st.name, []string{in.Address()}, nil))
		if ds, ok := s.(drift.DriftStore); ok {
			must(t, ds.RecordDrift(ctx, st.name, &drift.DriftCheck{Version: 1, Actor: "ci", Drifted: []drift.DriftRecord{
				{InstanceID: in.ID(), Address: in.Address(), Type: "aws_instance", Kind: drift.DriftDeleted, Changes: []drift.DriftChange{}}}}))
		}
	}
	if tenants, ok := s.(tenancy.TenantStore); ok {
		tok, _, err := tenancy.NewToken(tenancy.TokenOperator)
		if err != nil {
			t.Fatal(err)
		}
		must(t, tenants.CreateToken(ctx, tok))
		must(t, tenants.AppendAudit(ctx, &kilolock.AuditEntry{Actor: "op", Action: "token.issue", Target: "ws_b.env_b.net"}))
	}
}

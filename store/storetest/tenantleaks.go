package storetest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// SideChannel is an expression that fails on some values: a tenant who
// makes it fail only on rows it may not see, or who reads the value back
// from the message, reads those rows. Expr has two holes: {cond}, when
// the failing branch is taken, and {col}, a text that depends on the row
// (so that no planner folds the failing branch into a constant). Place
// is where the expression goes: "where", "on", "select" or "from" (a
// table-valued function).
type SideChannel struct {
	Name, Place, Expr string
}

// SideChannels are the failures of both dialects that depend on a value:
// a store where one does not exist (no such function, no such syntax)
// skips it. Each is a bit per query at least; the ones that quote their
// input give the value away whole.
var SideChannels = []SideChannel{
	// SQLite
	{"json_extract bad path", "where", `json_extract('{}', CASE WHEN {cond} THEN 'x' || {col} ELSE '$' END) IS NULL`},
	{"-> bad path", "where", `('{}' -> (CASE WHEN {cond} THEN 'x' || {col} ELSE '$' END)) IS NULL`},
	{"json malformed", "where", `json(CASE WHEN {cond} THEN 'x' || {col} ELSE '{}' END) IS NOT NULL`},
	{"json_each malformed", "from", `json_each(CASE WHEN {cond} THEN 'x' || {col} ELSE '[1]' END)`},
	{"abs overflow", "where", `abs(CASE WHEN {cond} THEN -9223372036854775807 - 1 + 0 * length({col}) ELSE 0 END) >= 0`},
	{"LIKE escape", "where", `'a' LIKE 'a' ESCAPE (CASE WHEN {cond} THEN 'xx' || {col} ELSE '!' END)`},
	{"GLOB pattern too complex", "where", `'a' GLOB (CASE WHEN {cond} THEN printf('%.60000c', 'x') || {col} ELSE 'a' END)`},
	{"zeroblob too big", "where", `length(zeroblob(CASE WHEN {cond} THEN 2000000000 + length({col}) ELSE 1 END)) > 0`},
	{"printf too big", "select", `length(printf('%.*c', CASE WHEN {cond} THEN 2000000000 + length({col}) ELSE 1 END, 'x'))`},
	{"ntile", "select", `ntile(CASE WHEN {cond} THEN 0 ELSE 1 END + 0 * length({col})) OVER ()`},
	{"json_object label", "where", `json_object(CASE WHEN {cond} THEN length({col}) ELSE 'k' END, 1) IS NOT NULL`},
	// PostgreSQL
	{"CAST integer", "where", `CAST(CASE WHEN {cond} THEN 'x' || {col} ELSE '1' END AS integer) > 0`},
	{"CAST json", "where", `CAST(CASE WHEN {cond} THEN 'x' || {col} ELSE '{}' END AS jsonb) IS NOT NULL`},
	{"CAST regclass", "where", `CAST(CASE WHEN {cond} THEN 'x' || {col} ELSE 'pg_class' END AS regclass) IS NOT NULL`},
	{"CAST boolean", "where", `CAST(CASE WHEN {cond} THEN 'x' || {col} ELSE 'true' END AS boolean)`},
	{"CAST xml", "where", `CAST(CASE WHEN {cond} THEN '<' || {col} ELSE '<a/>' END AS xml) IS NOT NULL`},
	{"division by zero", "where", `1 / (CASE WHEN {cond} THEN 0 ELSE 1 END + 0 * length({col})) > 0`},
	{"division by zero in ON", "on", `1 / (CASE WHEN {cond} THEN 0 ELSE 1 END + 0 * length({col})) > 0`},
	{"division by zero in SELECT", "select", `1 / (CASE WHEN {cond} THEN 0 ELSE 1 END + 0 * length({col}))`},
	{"format specifier", "where", `format(CASE WHEN {cond} THEN '%' || {col} ELSE '%s' END, 'a') IS NOT NULL`},
	{"chr", "where", `chr(CASE WHEN {cond} THEN -1 - length({col}) ELSE 65 END) IS NOT NULL`},
	{"regular expression", "where", `'a' ~ (CASE WHEN {cond} THEN '(' || {col} ELSE 'a' END)`},
	{"current_setting", "where", `current_setting(CASE WHEN {cond} THEN 'x' || {col} ELSE 'search_path' END) IS NOT NULL`},
	{"to_date", "where", `to_date(CASE WHEN {cond} THEN 'x' || {col} ELSE '2020' END, 'YYYY') IS NOT NULL`},
	{"decode hex", "where", `decode(CASE WHEN {cond} THEN 'x' || {col} ELSE '00' END, 'hex') IS NOT NULL`},
	{"jsonpath", "where", `jsonb_path_exists(CAST('{}' AS jsonb), CAST(CASE WHEN {cond} THEN 'x' || {col} ELSE '$' END AS jsonpath))`},
	{"jsonb_array_elements", "from", `jsonb_array_elements(CAST(CASE WHEN {cond} THEN 'x' || {col} ELSE '[1]' END AS jsonb))`},
	{"repeat too large", "where", `length(repeat('x', CASE WHEN {cond} THEN 2000000000 + length({col}) ELSE 1 END)) > 0`},
	// Both
	{"abs bigint", "where", `abs(CAST(CASE WHEN {cond} THEN -9223372036854775807 - 1 + 0 * length({col}) ELSE 0 END AS bigint)) >= 0`},
}

// sideChannelQuery is channel c over column col of view rel, failing
// where cond holds.
func sideChannelQuery(c SideChannel, rel, col, cond string) string {
	text := "coalesce(CAST(v." + col + " AS text), '')"
	expr := strings.NewReplacer("{cond}", cond, "{col}", text).Replace(c.Expr)
	switch c.Place {
	case "on":
		return `SELECT count(*) FROM ` + rel + ` v JOIN (SELECT 1 AS one) k ON ` + expr
	case "select":
		return `SELECT ` + expr + ` FROM ` + rel + ` v`
	case "from":
		return `SELECT count(*) FROM ` + rel + ` v, ` + expr + ` AS f`
	}
	return `SELECT count(*) FROM ` + rel + ` v WHERE ` + expr
}

// Conditions of the failing branch: never (the channel exists in this
// dialect), on the tenant's own rows (it is live), and on everyone else's
// (which the tenant must never reach).
const (
	condNever   = `1 = 0`
	condOwn     = `v.state LIKE 'ws\_a.%' ESCAPE '\'`
	condForeign = `v.state NOT LIKE 'ws\_a.%' ESCAPE '\'`
)

// testTenantQueryLeaks is the leak matrix: every side channel over every
// column of every documented view. A tenant of ws_a.env_a may make a
// channel fail on its own rows, and then the message holds no value of
// them; it may never make one fail on another tenant's rows, so a
// statement that fails only there must answer.
func testTenantQueryLeaks(t *testing.T, open Opener) {
	ctx := context.Background()
	s, sq := openScoped(t, open)
	seedLeakTenants(t, s)
	own, foreign := rowValues(t, s)
	scope := tenancy.QueryScope{Prefixes: []string{"ws_a.env_a."}}
	query := func(q string) (*kilolock.QueryResult, error) {
		return sq.QueryScoped(ctx, kilolock.QueryLimits{}, scope, q)
	}

	// The probe's own statements, as a tenant sent them.
	for _, q := range LeakProbes {
		res, err := query(q)
		if msg := leakIn(res, err, own, foreign); msg != "" {
			t.Errorf("%s: %s", q, msg)
		}
	}

	// A statement's own text stays in its error: the tenant learns what to
	// fix.
	if _, err := query(`SELECT nosuchcolumn FROM resources`); err == nil || !strings.Contains(err.Error(), "nosuchcolumn") {
		t.Errorf("a tenant's unknown column: %v", err)
	}

	live := map[string]int{}
	for _, rel := range tenancy.TenantQueryRelations {
		res, err := query(`SELECT * FROM ` + rel + ` LIMIT 0`)
		if err != nil {
			t.Fatalf("columns of %s: %v", rel, err)
		}
		for _, col := range res.Columns {
			for _, c := range SideChannels {
				if c.Place != "where" && col != "state" {
					continue // the other places once per view
				}
				if _, err := query(sideChannelQuery(c, rel, col, condNever)); err != nil {
					continue // not in this dialect, or not for this column's type
				}
				_, err := query(sideChannelQuery(c, rel, col, condOwn))
				if err == nil {
					continue // this value does not make it fail
				}
				live[rel]++
				if msg := leakIn(nil, err, own, foreign); msg != "" {
					t.Errorf("%s over %s.%s on the tenant's own rows: %s", c.Name, rel, col, msg)
				}
				if _, err := query(sideChannelQuery(c, rel, col, condForeign)); err != nil {
					t.Errorf("%s over %s.%s failed on another tenant's rows, so the tenant reads them bit by bit: %v", c.Name, rel, col, err)
				}
			}
		}
	}
	for _, rel := range tenancy.TenantQueryRelations {
		// Each view is probed by several channels of each dialect, so
		// that the matrix cannot pass by probing nothing.
		if live[rel] < 4 {
			t.Errorf("%s: only %d live side channels; the matrix probes too little", rel, live[rel])
		}
	}
	t.Logf("live side channels per view: %v", live)
}

// LeakProbes are the statements with which a probe read other tenants'
// data through error messages (issue 26): an output's value, an object's
// attributes, and every state's name.
var LeakProbes = []string{
	`select 1 from outputs where json_extract('{}', CASE WHEN state NOT LIKE 'ws_a%' THEN 'x' || value ELSE '$' END) is null`,
	`select 1 from resources where json_extract('{}', CASE WHEN state NOT LIKE 'ws_a%' THEN 'x' || attributes ELSE '$' END) is null`,
	`select 1 from version_history where json_extract('{}', CASE WHEN state NOT LIKE 'ws_a%' THEN 'x' || state ELSE '$' END) is null`,
	`select 1 from outputs where CAST(CASE WHEN state NOT LIKE 'ws_a%' THEN 'x' || value ELSE '1' END AS integer) > 0`,
}

// seedLeakTenants is SeedTenants with a second version of each state
// holding an instance that depends on the first, and a sensitive output,
// so that every view has rows of each tenant.
func seedLeakTenants(t testing.TB, s kilolock.Store) {
	t.Helper()
	SeedTenants(t, s)
	for _, st := range []struct{ name, secret string }{
		{"ws_a.env_a.net", "i-a"}, {"ws_b.env_b.net", "secret-b"}, {"plain", "secret-plain"},
	} {
		c := next(t, s, st.name)
		c.Upserts = append(c.Upserts, instance(t, resource("aws_eip", "ip"), intKey(0), `{"id":`+quote(st.secret+"-eip")+`}`, "aws_instance.web"))
		c.OutputUpserts = append(c.OutputUpserts, output("key", st.secret+"-key", true))
		commit(t, s, st.name, c)
	}
}

// rowValues are the distinctive values of the views' rows (see
// distinctive): of the tenant's own (ws_a.env_a) and of everyone else's
// but those the tenant holds too.
func rowValues(t testing.TB, s kilolock.Store) (own, foreign []string) {
	t.Helper()
	ownSet, foreignSet := map[string]bool{}, map[string]bool{}
	for _, rel := range tenancy.TenantQueryRelations {
		res, err := s.Query(context.Background(), kilolock.QueryLimits{}, `SELECT * FROM `+rel)
		if err != nil {
			t.Fatalf("the operator's SELECT * FROM %s: %v", rel, err)
		}
		stateAt := -1
		for i, c := range res.Columns {
			if c == "state" {
				stateAt = i
			}
		}
		for _, row := range res.Rows {
			set := foreignSet
			if row[stateAt] == "ws_a.env_a.net" {
				set = ownSet
			}
			for _, v := range row {
				if s := fmt.Sprint(v); distinctive(s) {
					set[s] = true
				}
			}
		}
	}
	for v := range ownSet {
		own = append(own, v)
	}
	for v := range foreignSet {
		if !ownSet[v] {
			foreign = append(foreign, v)
		}
	}
	// Within JSON values too: a message may quote a part of one.
	own = append(own, "ws_a.env_a", "i-a", "out-a")
	foreign = append(foreign, forbidden[:3]...)
	foreign = append(foreign, "secret-plain", "out-plain", "l-plain")
	return own, foreign
}

// distinctive reports whether a value is one no message holds by chance:
// five characters at least, not only letters (such as "string").
func distinctive(s string) bool {
	return len(s) >= 5 && strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
}

// plainState is the local state's name as a word of its own.
var plainState = regexp.MustCompile(`(^|[^a-z]|[^e]x)plain([^a-z]|$)`)

// leakIn says what of own or foreign a tenant's answer or error holds: no
// message may hold a value of any row, no answer another tenant's.
func leakIn(res *kilolock.QueryResult, err error, own, foreign []string) string {
	if err != nil {
		if !errors.Is(err, kilolock.ErrReadOnly) && !errors.Is(err, kilolock.ErrInvalid) && !errors.Is(err, kilolock.ErrRefused) {
			return "not a refusal: " + err.Error()
		}
		msg := err.Error()
		var ie *kilolock.InvalidError
		if errors.As(err, &ie) {
			msg += " " + ie.Hint
		}
		for _, v := range append(own, foreign...) {
			if strings.Contains(msg, v) {
				return fmt.Sprintf("the message holds the row value %q: %s", v, clipText(msg))
			}
		}
		if plainState.MatchString(msg) {
			return "the message names the local state plain: " + clipText(msg)
		}
		return ""
	}
	if cerr := CheckTenantAnswer(res, nil); cerr != nil {
		return cerr.Error()
	}
	return ""
}

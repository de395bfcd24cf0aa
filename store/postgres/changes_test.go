package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// TestQueryPlans checks that ChangesSince, HashesAt and Rejections reach
// the intervals, versions and rejections of a state of 10,000 instances and
// 1,001 versions through their indexes, never a sequential scan, so their
// cost follows the rows they return: before the tables were analyzed (as
// right after a first big write), after, with other states beside it, and
// in each case in a custom plan and in the generic plan that a prepared
// statement may switch to.
func TestQueryPlans(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	const name = "big"
	fillHistory(t, s, name, 10000, 1000)

	ids := make([]string, 300)
	for i := range ids {
		ids[i] = fmt.Sprintf("null_resource.r[%d]", i*7)
	}
	queries := []struct {
		name string
		sql  string
		args []any
	}{
		{"changes since", spell.Of(sqlstore.SQLChangesSince), []any{name, int64(997)}},
		{"instance hashes at", spell.Of(sqlstore.SQLInstanceHashesAt), []any{name, int64(500), ids}},
		{"output hashes at", spell.Of(sqlstore.SQLOutputHashesAt), []any{name, int64(500), []string{"o0", "o1", "o2"}}},
		{"rejections", spell.Of(sqlstore.SQLRejections), []any{name, 50}},
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for p, phase := range []string{"one state, unanalyzed", "one state, analyzed", "four states, analyzed"} {
		switch p {
		case 2:
			for i := range 3 {
				fillHistory(t, s, fmt.Sprint("other-", i), 1000, 100)
			}
			fallthrough
		case 1:
			if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for i, q := range queries {
				plan := explain(t, conn, fmt.Sprintf("q_%d_%s_%d", p, mode, i), mode, q.sql, q.args)
				if scans := seqScans(plan); len(scans) > 0 {
					t.Errorf("%s, %s, %s: sequential scans of %v:\n%s", q.name, phase, mode, scans, plan)
				}
			}
		}
	}
	if testing.Verbose() {
		for _, q := range queries {
			var lines []string
			rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) `+q.sql, q.args...)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var l string
				if err := rows.Scan(&l); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, l)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s:\n%s", q.name, strings.Join(lines, "\n"))
		}
	}
}

// fillHistory writes, with SQL rather than through Commit (which takes
// seconds for this), the intervals and versions a state of size instances
// has after a first write and then versions commits of 2 changes each
// (and of output o0 of 100), and one rejection per version.
func fillHistory(tb testing.TB, s *Store, name string, size, versions int) {
	tb.Helper()
	ctx := context.Background()
	if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
		tb.Fatal(err)
	}
	last := versions + 1
	for _, q := range []string{
		`INSERT INTO state_versions (state_id, number, serial, lineage, terraform_version, source, actor, lock_id,
			base_serial, added, changed, removed, instance_count, format)
		SELECT (SELECT id FROM states WHERE name = $1), n, n, 'lin', '1.9.0', 'apply', 'actor-' || n % 5,
			'lock-' || n % 3, n - 1, 0, 2, 0, $2, 'compact'
		FROM generate_series(1, $3::int) AS n`,
		// Instance i < 2*versions changed in version i/2 + 2.
		`INSERT INTO instance_intervals (state_id, instance_id, address, module, mode, type, name, index_key,
			deposed, each, provider, status, hash, valid_from, valid_to)
		SELECT (SELECT id FROM states WHERE name = $1), 'null_resource.r[' || i || ']', 'null_resource.r[' || i || ']',
			'', 'managed', 'null_resource', 'r', i::text, '', 'list', 'provider', '', sha256(i::text::bytea),
			1, CASE WHEN i < 2 * ($3::int - 1) THEN i / 2 + 2 END
		FROM generate_series(0, $2::int - 1) AS i`,
		`INSERT INTO instance_intervals (state_id, instance_id, address, module, mode, type, name, index_key,
			deposed, each, provider, status, hash, valid_from)
		SELECT (SELECT id FROM states WHERE name = $1), 'null_resource.r[' || i || ']', 'null_resource.r[' || i || ']',
			'', 'managed', 'null_resource', 'r', i::text, '', 'list', 'provider', '', sha256(('v2 ' || i)::bytea),
			i / 2 + 2
		FROM generate_series(0, least($2::int, 2 * ($3::int - 1)) - 1) AS i`,
		// 100 outputs, o0 changed by every version.
		`INSERT INTO output_intervals (state_id, name, hash, sensitive, valid_from)
		SELECT (SELECT id FROM states WHERE name = $1), 'o' || i, sha256(('o' || i)::bytea), false, 1
		FROM generate_series(1, 99) AS i WHERE $2::int > 0 AND $3::int > 0`,
		`INSERT INTO output_intervals (state_id, name, hash, sensitive, valid_from, valid_to)
		SELECT (SELECT id FROM states WHERE name = $1), 'o0', sha256(('o0 ' || n)::bytea), false, n, nullif(n + 1, $3 + 1)
		FROM generate_series(1, $3::int) AS n WHERE $2::int > 0`,
		`INSERT INTO rejected_commits (state_id, lock_id, actor, reason, latest_serial, base_serial)
		SELECT (SELECT id FROM states WHERE name = $1), 'lock-' || n, 'actor', 'conflict', n, n - 1
		FROM generate_series(1, $3::int) AS n WHERE $2::int > 0`,
		`UPDATE states SET current_version = $3, serial = $3, lineage = 'lin',
			current_version_id = (SELECT id FROM state_versions v WHERE v.state_id = states.id AND v.number = $3)
		WHERE name = $1 AND $2::int > 0`,
	} {
		if _, err := s.pool.Exec(ctx, q, name, size, last); err != nil {
			tb.Fatalf("%s: %v", strings.SplitN(q, "\n", 2)[0], err)
		}
	}
}

// explain prepares q on conn under plan_cache_mode mode and returns the
// JSON plan of executing it with args.
func explain(tb testing.TB, conn *pgxpool.Conn, stmt, mode, q string, args []any) string {
	tb.Helper()
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `SELECT set_config('plan_cache_mode', $1, false)`, mode); err != nil {
		tb.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET plan_cache_mode`)
	if _, err := conn.Exec(ctx, `PREPARE `+stmt+` AS `+q); err != nil {
		tb.Fatalf("prepare: %v", err)
	}
	defer conn.Exec(ctx, `DEALLOCATE `+stmt)
	// EXECUTE takes no parameters of the protocol's: literals.
	params := make([]string, len(args))
	for i, a := range args {
		params[i] = literal(a)
	}
	var plan string
	exec := `EXECUTE ` + stmt
	if len(params) > 0 {
		exec += `(` + strings.Join(params, ", ") + `)`
	}
	err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+exec).Scan(&plan)
	if err != nil {
		tb.Fatalf("explain: %v", err)
	}
	return plan
}

// literal is a as an SQL literal.
func literal(a any) string {
	switch a := a.(type) {
	case string:
		return "'" + strings.ReplaceAll(a, "'", "''") + "'"
	case []string:
		quoted := make([]string, len(a))
		for i, s := range a {
			quoted[i] = literal(s)
		}
		return "ARRAY[" + strings.Join(quoted, ", ") + "]::text[]"
	case [][]byte:
		quoted := make([]string, len(a))
		for i, b := range a {
			quoted[i] = `'\x` + hex.EncodeToString(b) + `'`
		}
		return "ARRAY[" + strings.Join(quoted, ", ") + "]::bytea[]"
	}
	return fmt.Sprint(a)
}

// seqScans returns the relations a JSON plan reads with a sequential scan,
// but for states (looked up by its unique name) and functions.
func seqScans(plan string) []string {
	var root []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &root); err != nil {
		return []string{"unreadable plan: " + err.Error()}
	}
	var out []string
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.NodeType == "Seq Scan" && n.Relation != "states" {
			out = append(out, n.Relation)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, r := range root {
		walk(r.Plan)
	}
	slices.Sort(out)
	return out
}

type planNode struct {
	NodeType string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Plans    []planNode `json:"Plans"`
}

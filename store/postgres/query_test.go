package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/storetest"
)

func TestQueryRefusesWrites(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	mustCommit(t, s, "q", commit(0, instance(t, "a", nil, "1")))
	for _, q := range []string{
		`INSERT INTO states (name) VALUES ('evil')`,
		`DELETE FROM states`,
		`UPDATE states SET serial = 99`,
		`CREATE TABLE evil (x int)`,
		`SELECT nextval('states_id_seq')`,
		// Turning the transaction read-write is refused once it has run a
		// query, and the store runs one (set_config) before the user's.
		`DO $$ BEGIN PERFORM set_config('transaction_read_only', 'off', true); DELETE FROM states; END $$`,
		`WITH d AS (DELETE FROM states RETURNING 1) SELECT count(*) FROM d`,
	} {
		_, err := s.Query(ctx, kilolock.QueryLimits{}, q)
		if q == `DO $$ BEGIN PERFORM set_config('transaction_read_only', 'off', true); DELETE FROM states; END $$` {
			// Refused either way; PostgreSQL names the set_config.
			if err == nil {
				t.Errorf("%s: no error", q)
			}
			continue
		}
		if !errors.Is(err, kilolock.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", q, err)
		}
	}
	st, err := s.State(ctx, "q")
	if err != nil || st.Serial != 1 {
		t.Fatalf("state changed by a refused query: %+v %v", st, err)
	}
	if _, err := s.State(ctx, "evil"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Fatalf("a refused query created a state: %v", err)
	}

	for _, q := range []string{`SELEC 1`, `SELECT * FROM nope`, `SELECT 1; SELECT 2`} {
		if _, err := s.Query(ctx, kilolock.QueryLimits{}, q); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", q, err)
		}
	}
	if _, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT $1::int`); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("missing argument: %v, want ErrInvalid", err)
	}
}

// TestQuerySessionReset checks that nothing a query leaves on its session
// survives it: a session advisory lock, a setting.
func TestQuerySessionReset(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if _, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	var got bool
	if err := s.pool.QueryRow(ctx, `SELECT pg_try_advisory_lock(4242)`).Scan(&got); err != nil || !got {
		t.Errorf("the advisory lock a query took is still held: %v %v", got, err)
	}
	for range 8 { // whichever connection serves it
		if _, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT set_config('statement_timeout', '0', false)`); err != nil {
			t.Fatal(err)
		}
		res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT current_setting('statement_timeout')`)
		if err != nil || res.Rows[0][0] != "30s" {
			t.Fatalf("statement_timeout in a later query: %v %v", res, err)
		}
	}
}

func TestQueryTimeoutAndCap(t *testing.T) {
	s := openStore(t, WithQueryTimeout(200*time.Millisecond))
	ctx := context.Background()
	_, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT pg_sleep(5)`)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "query_timeout" {
		t.Errorf("slow query: %v, want a query_timeout", err)
	}
	s = openStore(t)
	start := time.Now()
	// In the select list, generate_series streams its rows.
	res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT generate_series(1, 100000000)`)
	if err != nil {
		t.Fatalf("capped query: %v", err)
	}
	if len(res.Rows) != MaxQueryRows || res.Rows[MaxQueryRows-1][0] != int64(MaxQueryRows) {
		t.Fatalf("capped query: %d rows", len(res.Rows))
	}
	t.Logf("capped query took %s", time.Since(start))
	if res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT 1`); err != nil || res.Rows[0][0] != int64(1) {
		t.Errorf("query after a capped one: %v %v", res, err)
	}
}

func TestQueryViews(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	c := commit(0, instance(t, "a", nil, "1"), instance(t, "b", 0, "2", "terraform_data.a"))
	c.OutputUpserts = []kilolock.Output{output("greeting", "hi", false)}
	mustCommit(t, s, "views", c)
	mustCommit(t, s, "views", commit(1, instance(t, "a", nil, "changed")))

	for _, tc := range []struct {
		sql  string
		args []any
		want string // JSON of the result
	}{
		{
			`SELECT state, address, instance_id, mode, type, name, index_key, deposed, status, attributes ->> 'input' FROM resources ORDER BY address`, nil,
			`{"columns":["state","address","instance_id","mode","type","name","index_key","deposed","status","?column?"],"rows":[` +
				`["views","terraform_data.a","terraform_data.a","managed","terraform_data","a","null","","","changed"],` +
				`["views","terraform_data.b[0]","terraform_data.b[0]","managed","terraform_data","b","0","","","2"]]}`,
		},
		{
			`SELECT attributes, dependencies FROM resources WHERE address = $1`, []any{"terraform_data.b[0]"},
			`{"columns":["attributes","dependencies"],"rows":[["{\"id\": \"b\", \"input\": \"2\", \"output\": null, \"triggers_replace\": null}","[\"terraform_data.a\"]"]]}`,
		},
		{
			`SELECT state, address, depends_on FROM resource_dependencies`, nil,
			`{"columns":["state","address","depends_on"],"rows":[["views","terraform_data.b[0]","terraform_data.a"]]}`,
		},
		{
			`SELECT state, name, value, type, sensitive FROM outputs`, nil,
			`{"columns":["state","name","value","type","sensitive"],"rows":[["views","greeting","\"hi\"","\"string\"",false]]}`,
		},
		{
			`SELECT address, valid_from, valid_to, length(hash) FROM resource_history ORDER BY address, valid_from`, nil,
			`{"columns":["address","valid_from","valid_to","length"],"rows":[` +
				`["terraform_data.a",1,2,64],["terraform_data.a",2,null,64],["terraform_data.b[0]",1,null,64]]}`,
		},
		{
			`SELECT number, serial, source, actor, lock_id, added, changed, removed, instance_count FROM version_history ORDER BY number`, nil,
			`{"columns":["number","serial","source","actor","lock_id","added","changed","removed","instance_count"],"rows":[` +
				`[1,1,"apply","alice","",2,0,0,2],[2,2,"apply","alice","",0,1,0,2]]}`,
		},
		{
			`SELECT '\x0102'::bytea, 1.50::numeric, 'NaN'::float8, true AS bool, '2026-01-02 03:04:05.123456+00'::timestamptz, ARRAY[1,2], '{"a":[1]}'::json`, nil,
			`{"columns":["bytea","numeric","float8","bool","timestamptz","array","json"],"rows":[["\\x0102",1.50,"NaN",true,"2026-01-02T03:04:05.123456Z",[1,2],"{\"a\":[1]}"]]}`,
		},
	} {
		res, err := s.Query(ctx, kilolock.QueryLimits{}, tc.sql, tc.args...)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		got, err := json.Marshal(res)
		if err != nil {
			t.Errorf("%s: result does not encode: %v", tc.sql, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
}

// TestQueryPrivileges runs, with the store connected as a superuser, what
// a hostile user of the query API would try: none of it may run a
// program, read or write a file, read a base table, take another role or
// change anything.
func TestQueryPrivileges(t *testing.T) {
	url := testpg.URL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var super bool
	if err := admin.QueryRow(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil || !super {
		t.Skipf("the test database's role is no superuser (%v): nothing to escape from", err)
	}
	if _, err := admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS dblink`); err != nil {
		t.Logf("no dblink: %v", err)
	}
	s := openURL(t, url)
	mustCommit(t, s, "q", commit(0, instance(t, "a", nil, "1")))
	if _, err := s.Lock(ctx, "q", lockInfo("L"), kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Snapshot(ctx, "q", 1)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(os.TempDir(), fmt.Sprintf("kl-probe-%d", os.Getpid()))
	var pgUser, pgPassword string
	_ = admin.QueryRow(ctx, `SELECT current_user`).Scan(&pgUser)
	dsn := fmt.Sprintf("dbname=%s user=%s password=%s", admin.Config().Database, pgUser, pgPassword)
	for _, q := range []string{
		`COPY (SELECT 1) TO PROGRAM 'id > ` + probe + `-program'`,
		`COPY (SELECT 1) TO '` + probe + `-copy'`,
		`SELECT pg_read_file('/etc/passwd')`,
		`SELECT pg_read_binary_file('PG_VERSION')`,
		`SELECT pg_ls_dir('.')`,
		`SELECT pg_stat_file('PG_VERSION')`,
		`SELECT lo_import('/etc/passwd')`,
		`SELECT lo_export(lo_from_bytea(0, 'x'), '` + probe + `-lo')`,
		`SELECT * FROM dblink('` + dsn + `', 'SELECT secret_hash FROM tokens') AS t(h text)`,
		`SELECT dblink_exec('` + dsn + `', 'DELETE FROM locks')`,
		`SET ROLE postgres`,
		`SET SESSION AUTHORIZATION postgres`,
		`SELECT set_config('role', 'postgres', true)`,
		`SELECT set_config('session_authorization', 'postgres', true)`,
		`SELECT * FROM tokens`,
		`SELECT * FROM kl_settings`,
		`SELECT * FROM payloads`,
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()`,
		`CREATE TEMP TABLE t (a int)`,
		`SELECT nextval('states_id_seq')`,
	} {
		t.Run(q, func(t *testing.T) {
			res, err := s.Query(ctx, kilolock.QueryLimits{}, q)
			if q[:6] == "SELECT" && err == nil && strings.Contains(q, "pg_terminate_backend") {
				// Allowed to run, it may signal only its own role's backends.
				return
			}
			if err == nil {
				t.Fatalf("ran: %v", res)
			}
			if errors.Is(err, kilolock.ErrUnavailable) {
				t.Fatalf("%v: refused as if the database were down", err)
			}
		})
	}
	// RESET ROLE runs (it is no error to ask), but changes nothing: the
	// session user is the query role.
	for _, q := range []string{`RESET ROLE`, `SELECT set_config('role', 'none', true)`, `RESET SESSION AUTHORIZATION`} {
		if _, err := s.Query(ctx, kilolock.QueryLimits{}, q); err != nil {
			t.Logf("%s: %v", q, err)
		}
	}
	res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT current_user, session_user, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)`)
	if err != nil || res.Rows[0][0] != res.Rows[0][1] || res.Rows[0][2] != false || !strings.HasPrefix(res.Rows[0][0].(string), "kl_query_") {
		t.Errorf("the query role: %v %v", res, err)
	}

	for _, suffix := range []string{"-program", "-copy", "-lo"} {
		if _, err := os.Stat(probe + suffix); err == nil {
			os.Remove(probe + suffix)
			t.Errorf("a query created %s", probe+suffix)
		}
	}
	var objects int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_largeobject_metadata`).Scan(&objects); err != nil || objects != 0 {
		t.Errorf("large objects: %d %v", objects, err)
	}
	after, err := s.Snapshot(ctx, "q", 1)
	if err != nil || len(after.Instances) != len(before.Instances) {
		t.Fatalf("snapshot after: %v", err)
	}
	if st, err := s.State(ctx, "q"); err != nil || len(st.Locks) != 1 || st.Current != 1 {
		t.Errorf("state after: %+v %v", st, err)
	}
}

// TestQueryRole checks where the query role comes from: made once and
// shared by replicas; refused, with a hint, when the store's role may not
// make it; and never a superuser's connection named by WithQueryURL.
func TestQueryRole(t *testing.T) {
	ctx := context.Background()
	url := testpg.URL(t)
	a, b := openURL(t, url), openURL(t, url) // two replicas
	for _, s := range []*Store{a, b} {
		if res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT session_user`); err != nil || !strings.HasPrefix(res.Rows[0][0].(string), "kl_query_") {
			t.Errorf("a replica's query session: %v %v", res, err)
		}
	}

	t.Run("the store's role may not make it", func(t *testing.T) {
		owner := fmt.Sprintf("kl_owner_%d", time.Now().UnixNano())
		t.Cleanup(func() { // after the database is dropped
			if admin, err := pgx.Connect(context.Background(), url); err == nil {
				admin.Exec(context.Background(), `DROP ROLE IF EXISTS `+owner)
				admin.Close(context.Background())
			}
		})
		url := testpg.URL(t)
		admin, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close(ctx)
		db := admin.Config().Database
		for _, q := range []string{
			`CREATE ROLE ` + owner + ` LOGIN`,
			`ALTER DATABASE ` + db + ` OWNER TO ` + owner,
			`ALTER SCHEMA public OWNER TO ` + owner,
		} {
			if _, err := admin.Exec(ctx, q); err != nil {
				t.Skipf("%s: %v", q, err)
			}
		}
		if !strings.Contains(url, "?") {
			t.Skip("the test database URL has no query to add the user to")
		}
		ownerURL := url + "&user=" + owner
		s := openURL(t, ownerURL)
		mustCommit(t, s, "q", commit(0, instance(t, "a", nil, "1")))
		_, err = s.Query(ctx, kilolock.QueryLimits{}, `SELECT * FROM resources`)
		var refused *kilolock.RefusedError
		if !errors.As(err, &refused) || refused.Code != "query_role_unavailable" || !strings.Contains(refused.Hint, "CREATEROLE") {
			t.Fatalf("Query: %v, want query_role_unavailable naming CREATEROLE", err)
		}
		if _, err := admin.Exec(ctx, `ALTER ROLE `+owner+` CREATEROLE`); err != nil {
			t.Fatal(err)
		}
		s = openURL(t, ownerURL)
		if res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT address FROM resources`); err != nil || len(res.Rows) != 1 {
			t.Errorf("once it may: %v %v", res, err)
		}
	})

	t.Run("a superuser's query URL", func(t *testing.T) {
		s := openURL(t, testpg.URL(t), WithQueryURL(url))
		_, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT 1`)
		var refused *kilolock.RefusedError
		if !errors.As(err, &refused) || refused.Code != "query_role_unsafe" {
			t.Fatalf("Query: %v, want query_role_unsafe", err)
		}
	})
}

// TestQueryHugeValue checks that one value past the answer's byte cap is
// refused on the header of its message, before it is read into memory.
func TestQueryHugeValue(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	var err error
	heap := storetest.HeapAllocated(func() {
		_, err = s.Query(ctx, kilolock.QueryLimits{}, `SELECT repeat(chr(1), 50000000)`)
	})
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "query_too_large" {
		t.Fatalf("error %v, want code query_too_large", err)
	}
	if heap > 32<<20 {
		t.Errorf("the refused query allocated %d MiB, want at most 32", heap>>20)
	}
	if res, err := s.Query(ctx, kilolock.QueryLimits{}, `SELECT length(repeat('x', 1000))`); err != nil || res.Rows[0][0] != int64(1000) {
		t.Errorf("the next query: %v %v", res, err)
	}
}

package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
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
		_, err := s.Query(ctx, q)
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
	if _, err := s.Query(ctx, `SELECT count(*) FROM states WHERE name = 'evil'`); err != nil {
		t.Fatal(err)
	}

	for _, q := range []string{`SELEC 1`, `SELECT * FROM nope`, `SELECT 1; SELECT 2`} {
		if _, err := s.Query(ctx, q); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", q, err)
		}
	}
	if _, err := s.Query(ctx, `SELECT $1::int`); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("missing argument: %v, want ErrInvalid", err)
	}
}

// TestQuerySessionReset checks that nothing a query leaves on its session
// survives it: a session advisory lock, a setting.
func TestQuerySessionReset(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if _, err := s.Query(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	var got bool
	if err := s.pool.QueryRow(ctx, `SELECT pg_try_advisory_lock(4242)`).Scan(&got); err != nil || !got {
		t.Errorf("the advisory lock a query took is still held: %v %v", got, err)
	}
	for range 8 { // whichever connection serves it
		if _, err := s.Query(ctx, `SELECT set_config('statement_timeout', '0', false)`); err != nil {
			t.Fatal(err)
		}
		res, err := s.Query(ctx, `SELECT current_setting('statement_timeout')`)
		if err != nil || res.Rows[0][0] != "30s" {
			t.Fatalf("statement_timeout in a later query: %v %v", res, err)
		}
	}
}

func TestQueryTimeoutAndCap(t *testing.T) {
	s := openStore(t, WithQueryTimeout(200*time.Millisecond))
	ctx := context.Background()
	_, err := s.Query(ctx, `SELECT pg_sleep(5)`)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || ie.Code != "query_timeout" {
		t.Errorf("slow query: %v, want a query_timeout", err)
	}
	s = openStore(t)
	start := time.Now()
	// In the select list, generate_series streams its rows.
	res, err := s.Query(ctx, `SELECT generate_series(1, 100000000)`)
	if err != nil {
		t.Fatalf("capped query: %v", err)
	}
	if len(res.Rows) != MaxQueryRows || res.Rows[MaxQueryRows-1][0] != int64(MaxQueryRows) {
		t.Fatalf("capped query: %d rows", len(res.Rows))
	}
	t.Logf("capped query took %s", time.Since(start))
	if res, err := s.Query(ctx, `SELECT 1`); err != nil || res.Rows[0][0] != int64(1) {
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
		res, err := s.Query(ctx, tc.sql, tc.args...)
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

package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// testQuery checks the views users query and that Query cannot write.
func testQuery(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name = "queried"

	web := resource("aws_instance", "web")
	x := graph.Resource{Module: `module.m["a"]`, Mode: "managed", Type: "terraform_data", Name: "x", Each: "map", Provider: `provider["terraform.io/builtin/terraform"]`}
	ami := graph.Resource{Mode: "data", Type: "aws_ami", Name: "ubuntu", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`}
	web0 := instance(t, web, intKey(0), `{"id":"i-0","ami":"ami-1"}`, "data.aws_ami.ubuntu")
	web1 := instance(t, web, intKey(1), `{"id":"i-1","ami":"ami-1"}`, "data.aws_ami.ubuntu", `module.m["a"].terraform_data.x`)
	xa := instance(t, x, strKey("a"), `{"id":"x-a","input":null}`)
	amiI := instance(t, ami, graph.IndexKey{}, `{"id":"ami-1"}`)
	web0v2 := instance(t, web, intKey(0), `{"id":"i-0","ami":"ami-2"}`, "data.aws_ami.ubuntu")
	web0deposed := newInstance(t, web, object(intKey(0), "", "0badcafe", `{"id":"i-old"}`, nil))

	c := next(t, s, name)
	c.Upserts = []graph.Instance{web0, web1, xa, amiI}
	c.OutputUpserts = []graph.Output{output("ip", "10.0.0.1", false), output("token", "s3cret", true)}
	commit(t, s, name, c)
	c = next(t, s, name)
	c.LockID = "l-1"
	lock(t, s, name, "l-1", kilolock.LockExclusive)
	c.Upserts = []graph.Instance{web0v2, web0deposed}
	c.Removed = []string{xa.ID()}
	c.OutputsRemoved = []string{"ip"}
	commit(t, s, name, c)
	// Another state, whose rows the queries must not pick up by accident.
	other := next(t, s, "other")
	other.Upserts = []graph.Instance{web0}
	commit(t, s, "other", other)
	refused := record(t, s, name, rejection("l-2", []string{"aws_instance.web[0]", "output.ip"}, &kilolock.Winner{Actor: "l-1@host", LockID: "l-1", Version: 2}))
	record(t, s, name, rejection("l-3", nil, nil))
	const hint = "pull the state, re-plan and apply again"

	tests := []struct {
		query string
		args  []any
		want  [][]any // JSON text is compared as JSON; integers of any width
	}{
		{`SELECT address, instance_id, module, mode, type, name, index_key, deposed, provider, status
FROM resources WHERE state = $1 ORDER BY instance_id`, []any{name}, [][]any{
			{"aws_instance.web[0]", "aws_instance.web[0]", "", "managed", "aws_instance", "web", json0("0"), "", web.Provider, ""},
			{"aws_instance.web[0]", "aws_instance.web[0] (deposed object 0badcafe)", "", "managed", "aws_instance", "web", json0("0"), "0badcafe", web.Provider, ""},
			{"aws_instance.web[1]", "aws_instance.web[1]", "", "managed", "aws_instance", "web", json0("1"), "", web.Provider, ""},
			{"data.aws_ami.ubuntu", "data.aws_ami.ubuntu", "", "data", "aws_ami", "ubuntu", json0("null"), "", ami.Provider, ""},
		}},
		{`SELECT attributes, sensitive_attributes, dependencies FROM resources WHERE state = $1 AND instance_id = $2`,
			[]any{name, "aws_instance.web[1]"}, [][]any{
				{json0(`{"id":"i-1","ami":"ami-1"}`), json0(`[]`), json0(`["data.aws_ami.ubuntu","module.m[\"a\"].terraform_data.x"]`)},
			}},
		{`SELECT address, depends_on FROM resource_dependencies WHERE state = $1 ORDER BY address, depends_on`, []any{name}, [][]any{
			{"aws_instance.web[0]", "data.aws_ami.ubuntu"},
			{"aws_instance.web[1]", "data.aws_ami.ubuntu"},
			{"aws_instance.web[1]", `module.m["a"].terraform_data.x`},
		}},
		{`SELECT name, value, type, sensitive FROM outputs WHERE state = $1 ORDER BY name`, []any{name}, [][]any{
			{"token", json0(`"s3cret"`), json0(`"string"`), true},
		}},
		{`SELECT address, instance_id, type, valid_from, valid_to, hash FROM resource_history WHERE state = $1 ORDER BY instance_id, valid_from`,
			[]any{name}, [][]any{
				{"aws_instance.web[0]", web0.ID(), "aws_instance", 1, 2, web0.Hash.String()},
				{"aws_instance.web[0]", web0.ID(), "aws_instance", 2, nil, web0v2.Hash.String()},
				{"aws_instance.web[0]", web0deposed.ID(), "aws_instance", 2, nil, web0deposed.Hash.String()},
				{"aws_instance.web[1]", web1.ID(), "aws_instance", 1, nil, web1.Hash.String()},
				{"data.aws_ami.ubuntu", amiI.ID(), "aws_ami", 1, nil, amiI.Hash.String()},
				{`module.m["a"].terraform_data.x["a"]`, xa.ID(), "terraform_data", 1, 2, xa.Hash.String()},
			}},
		{`SELECT number, serial, source, actor, lock_id, base_serial, added, changed, removed, instance_count
FROM version_history WHERE state = $1 ORDER BY number`, []any{name}, [][]any{
			{1, 1, "push", "storetest", "", 0, 4, 0, 0, 4},
			{2, 2, "push", "storetest", "l-1", 0, 1, 1, 1, 4},
		}},
		{`SELECT count(*) FROM version_history WHERE created_at IS NULL`, nil, [][]any{{0}}},
		{`SELECT state, lock_id, actor, reason, addresses, latest_serial, base_serial, winner_actor, winner_lock_id, winner_version, hint
FROM rejected_commit_history WHERE state = $1 ORDER BY lock_id`, []any{name}, [][]any{
			{name, "l-2", "l-2@host", "conflict", json0(`["aws_instance.web[0]","output.ip"]`), 7, 5, "l-1@host", "l-1", 2, hint},
			{name, "l-3", "l-3@host", "conflict", json0(`[]`), 7, 5, nil, nil, nil, hint},
		}},
		// Timestamps read the same on every store: UTC, microseconds.
		{`SELECT created_at FROM rejected_commit_history WHERE lock_id = $1`, []any{"l-2"}, [][]any{
			{refused.Created.Format("2006-01-02T15:04:05.000000Z")},
		}},
		{`SELECT state, count(*) FROM resources GROUP BY state ORDER BY state`, nil, [][]any{{"other", 1}, {name, 4}}},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("select %d", i), func(t *testing.T) {
			res, err := s.Query(ctx, kilolock.QueryLimits{}, tt.query, tt.args...)
			if err != nil {
				t.Fatalf("%s: %v", tt.query, err)
			}
			if len(res.Rows) != len(tt.want) {
				t.Fatalf("%s: %d rows, want %d: %v", tt.query, len(res.Rows), len(tt.want), res.Rows)
			}
			for r, row := range res.Rows {
				if len(row) != len(res.Columns) || len(row) != len(tt.want[r]) {
					t.Fatalf("row %d has %d values for %d columns, want %d", r, len(row), len(res.Columns), len(tt.want[r]))
				}
				for c, want := range tt.want[r] {
					if !sameValue(t, want, row[c]) {
						t.Errorf("row %d column %s = %#v, want %#v", r, res.Columns[c], row[c], want)
					}
				}
			}
		})
	}

	t.Run("columns", func(t *testing.T) {
		views := map[string][]string{
			"resources": {"state", "address", "instance_id", "module", "mode", "type", "name", "index_key", "deposed",
				"provider", "status", "attributes", "sensitive_attributes", "dependencies", "raw_json"},
			"resource_dependencies": {"state", "address", "depends_on"},
			"outputs":               {"state", "name", "value", "type", "sensitive", "raw_json"},
			"resource_history":      {"state", "address", "instance_id", "type", "valid_from", "valid_to", "hash"},
			"version_history": {"state", "number", "serial", "source", "actor", "lock_id", "base_serial", "created_at",
				"added", "changed", "removed", "instance_count", "merged"},
			"rejected_commit_history": {"state", "created_at", "lock_id", "actor", "reason", "addresses", "latest_serial",
				"base_serial", "winner_actor", "winner_lock_id", "winner_version", "hint"},
		}
		for view, want := range views {
			res, err := s.Query(ctx, kilolock.QueryLimits{}, "SELECT * FROM "+view)
			if err != nil {
				t.Fatalf("%s: %v", view, err)
			}
			if diff := cmp.Diff(want, res.Columns); diff != "" {
				t.Errorf("columns of %s (-want +got):\n%s", view, diff)
			}
			if len(res.Rows) == 0 {
				t.Errorf("%s has no rows", view)
			}
		}
	})

	writes := []string{
		`INSERT INTO states (name, created_at) SELECT 'evil', created_at FROM states LIMIT 1`,
		`UPDATE states SET serial = 999`,
		`UPDATE locks SET lock_id = 'evil'`,
		`DELETE FROM locks`,
		`DELETE FROM state_versions`,
		`DELETE FROM rejected_commits`,
		`DROP TABLE instance_intervals`,
		`DROP VIEW resources`,
		`CREATE TABLE evil (a INT)`,
		`CREATE INDEX evil ON states (serial)`,
		`ALTER TABLE states ADD COLUMN evil INT`,
	}
	for _, q := range writes {
		t.Run("refuses "+q, func(t *testing.T) {
			before := freeze(t, s, name)
			_, err := s.Query(ctx, kilolock.QueryLimits{}, q)
			errorIs(t, err, kilolock.ErrReadOnly)
			before.unchanged(t, s, name)
			if _, err := s.State(ctx, "evil"); err == nil {
				t.Error("a state named evil exists")
			}
		})
	}

	t.Run("bad statement is invalid", func(t *testing.T) {
		for _, q := range []string{"SELEC 1", "SELECT * FROM no_such_view"} {
			_, err := s.Query(ctx, kilolock.QueryLimits{}, q)
			errorIs(t, err, kilolock.ErrInvalid)
		}
	})

	t.Run("rows are capped", func(t *testing.T) {
		res, err := s.Query(ctx, kilolock.QueryLimits{}, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) SELECT i FROM n`, MaxQueryRows+50)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != MaxQueryRows {
			t.Errorf("%d rows, want %d", len(res.Rows), MaxQueryRows)
		}
	})
}

// jsonText is an expected value that is JSON text, compared as JSON.
type jsonText string

func json0(s string) jsonText { return jsonText(s) }

// sameValue reports whether a Query value got is want: JSON text compared
// as JSON, integers whatever their width.
func sameValue(t testing.TB, want, got any) bool {
	t.Helper()
	switch want := want.(type) {
	case jsonText:
		s, ok := got.(string)
		if !ok {
			return false
		}
		var w, g any
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatalf("bad expected JSON %s: %v", want, err)
		}
		if err := json.Unmarshal([]byte(s), &g); err != nil {
			return false
		}
		return cmp.Equal(w, g)
	case int:
		n, ok := toInt(got)
		return ok && n == int64(want)
	}
	return cmp.Equal(want, got)
}

func toInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// asInt returns a Query value that must be an integer.
func asInt(t testing.TB, v any) int64 {
	t.Helper()
	n, ok := toInt(v)
	if !ok {
		t.Fatalf("%#v (%T) is not an integer", v, v)
	}
	return n
}

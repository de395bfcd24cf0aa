package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// The queries of ChangesSince, HashesAt, Rejections and a commit's
// lookups of current intervals reach the intervals and rejections through
// index searches, never a scan of a table: their cost must follow the rows
// they return, not the state's size or history. SQLite plans without statistics here (the store never runs
// ANALYZE), so the plan of an empty database is the plan of a big one.
func TestQueryPlans(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	for name, q := range map[string]string{
		"changes since":        sqlstore.SQLChangesSince,
		"instance hashes at":   sqlstore.SQLInstanceHashesAt,
		"output hashes at":     sqlstore.SQLOutputHashesAt,
		"rejections":           sqlstore.SQLRejections,
		"current instances":    sqlstore.SQLCurrentInstances,
		"current outputs":      sqlstore.SQLCurrentOutputs,
		"versions of a number": `SELECT 1 FROM state_versions WHERE state_id = $1 AND number = $2`,
	} {
		plan := queryPlan(t, s, q, "a", 2, `["a"]`)
		for _, step := range plan {
			// A search of the intervals by state_id alone is a scan of
			// the state's history; the scan of json_each is the list of keys,
			// those of c and r the query's own subqueries (rows it returns).
			bad := strings.HasPrefix(step, "SCAN ") && !strings.HasPrefix(step, "SCAN json_each VIRTUAL TABLE") && step != "SCAN c" && step != "SCAN r" ||
				strings.Contains(step, "_intervals") && strings.HasSuffix(step, "(state_id=?)")
			if bad {
				t.Errorf("%s: %q scans more than it returns:\n%s", name, step, strings.Join(plan, "\n"))
			}
		}
	}
}

// queryPlan is the steps of SQLite's plan of the shared SQL q.
func queryPlan(t *testing.T, s *Store, q string, args ...any) []string {
	t.Helper()
	rows, err := s.d.write.db.Query("EXPLAIN QUERY PLAN "+spell.Of(q), args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	return plan
}

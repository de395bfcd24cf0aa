package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// TestCommitLookupPlans checks that a commit's lookup of the current
// intervals of the instances it touches probes the unique index of current
// intervals, once per key, in custom and generic plans, before and after
// the tables are analyzed: right after a first write of 10,000 instances
// with the IDs a real configuration has (modules, for_each keys), the
// planner once took (state_id, valid_to IS NULL) of the valid_to index
// instead and read every current interval of the state for each key, so a
// commit of 2 changes cost O(state).
func TestCommitLookupPlans(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	const n = 10000
	e := kilolock.NewEngine(s, kilolock.Options{})
	doc := graphtest.Generate(n, 64, graph.FormatCompact)
	if _, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	g, err := graph.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{g.Instances[17].ID(), g.Instances[n/2].ID()}
	queries := []struct {
		name, sql, index string
		args             []any
	}{
		{"instances", spell.Of(sqlstore.SQLCurrentInstances), "instance_intervals_current", []any{"big", ids}},
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for p, phase := range []string{"unanalyzed", "analyzed"} {
		if p == 1 {
			if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for i, q := range queries {
				plan := explain(t, conn, fmt.Sprintf("lookup_%d_%s_%d", p, mode, i), mode, q.sql, q.args)
				used := intervalIndexes(t, plan)
				if len(used) == 0 {
					t.Errorf("%s, %s, %s: no read of intervals in the plan:\n%s", q.name, phase, mode, plan)
				}
				for _, u := range used {
					if u != q.index {
						t.Errorf("%s, %s, %s: reads intervals through %q, want %s:\n%s", q.name, phase, mode, u, q.index, plan)
					}
				}
			}
		}
	}
}

// intervalIndexes returns the index of each scan of instance_intervals or
// output_intervals in a JSON plan ("" for a scan without one).
func intervalIndexes(tb testing.TB, plan string) []string {
	tb.Helper()
	type node struct {
		Relation string `json:"Relation Name"`
		Index    string `json:"Index Name"`
		Plans    []node `json:"Plans"`
	}
	var root []struct{ Plan node }
	if err := json.Unmarshal([]byte(plan), &root); err != nil {
		tb.Fatalf("unreadable plan: %v", err)
	}
	var out []string
	var walk func(n node)
	walk = func(n node) {
		if strings.HasSuffix(n.Relation, "_intervals") {
			out = append(out, n.Index)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, r := range root {
		walk(r.Plan)
	}
	return out
}

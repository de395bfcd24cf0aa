package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// TestInventoryPlans: a search by type and its next page find the current
// intervals through instance_intervals_current_type (no sequential scan
// of the intervals), in custom and generic plans, before and after
// ANALYZE, on 40 states of 500 instances. The duplicates' plan, a pass
// over every current object, is logged.
func TestInventoryPlans(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	types := []string{"aws_instance", "aws_subnet", "aws_s3_bucket", "aws_iam_role", "aws_lb"}
	for st := range 40 {
		c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "plans", Source: kilolock.SourcePush, Format: "compact"}}
		for i := range 500 {
			typ := types[i%len(types)]
			if i == 0 {
				typ = "aws_rare"
			}
			in, err := graph.NewInstance(graph.Resource{Mode: "managed", Type: typ, Name: "r", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`},
				fmt.Appendf(nil, `{"index_key":%d,"schema_version":0,"attributes":{"id":"%s-%d-%d"},"sensitive_attributes":[]}`, i, typ, st, i))
			if err != nil {
				t.Fatal(err)
			}
			c.Upserts = append(c.Upserts, in)
		}
		if _, _, err := s.Commit(ctx, fmt.Sprintf("fleet-%02d", st), c); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	filters := map[string]inventory.ScanFilter{
		"type":       {Type: "aws_rare"},
		"type, page": {Type: "aws_rare", After: inventory.Cursor{StateID: 3, InstanceID: "aws_rare.r[0]"}},
		"duplicates": {NoDeposed: true, ByType: true},
	}
	for p, phase := range []string{"unanalyzed", "analyzed"} {
		if p == 1 {
			if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			i := 0
			for name, f := range filters {
				i++
				q, args := sqlstore.ScanSQL(f)
				plan := explain(t, conn, fmt.Sprintf("inventory_%d_%s_%d", p, mode, i), mode, spell.Of(q), args)
				if name == "duplicates" {
					// A pass over every current object: a sequential scan
					// is as good a plan as any, so it is only logged.
					t.Logf("%s, %s, %s: sequential scans of %v", name, phase, mode, seqScans(plan))
					continue
				}
				if slices.Contains(seqScans(plan), "instance_intervals") || !strings.Contains(plan, `"instance_intervals_current_type"`) {
					t.Errorf("%s, %s, %s: does not read intervals through instance_intervals_current_type:\n%s", name, phase, mode, plan)
				}
			}
		}
	}
}

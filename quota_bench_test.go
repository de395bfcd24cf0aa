package kilolock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// benchInstance is instance i, revision rev, of a terraform_data fleet
// with about 1 KB of attributes each.
func benchInstance(tb testing.TB, i, rev int) graph.Instance {
	tb.Helper()
	r := graph.Resource{Mode: "managed", Type: "terraform_data", Name: "fleet", Provider: `provider["terraform.io/builtin/terraform"]`}
	obj := fmt.Sprintf(`{"index_key":%d,"schema_version":0,"attributes":{"id":"i-%08d","rev":%d,"pad":%q},"sensitive_attributes":[]}`, i, i, rev, strings.Repeat("x", 900))
	in, err := graph.NewInstance(r, []byte(obj))
	if err != nil {
		tb.Fatal(err)
	}
	return in
}

// BenchmarkQuotaCheck is what the quota check adds to the commit of a POST
// to a 10,000-instance state. A commit that adds no managed instance is
// not checked (change=2: two instances changed); one that adds one is
// (add=1: one added, one changed, as many rows), on a state of the local
// lane with no limit (one more statement: the limits), and on a tenant's
// state with a limit of its own and one on its environment of 20 states
// (the limits, the environment's row lock and the sum of its states'
// counts). The check's cost is add=1 minus change=2. The counts come from
// the commit's changes: the state's 10,000 instances are never counted.
func BenchmarkQuotaCheck(b *testing.B) {
	enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
		ctx := context.Background()
		s := open(b)
		ts, qs := s.(tenancy.TenantStore), s.(kilolock.QuotaStore)
		ws := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "bench", Kind: tenancy.WorkspaceOrganization}
		env := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}
		if err := ts.CreateWorkspace(ctx, ws); err != nil {
			b.Fatal(err)
		}
		if err := ts.CreateEnvironment(ctx, env); err != nil {
			b.Fatal(err)
		}
		tenant, _ := tenancy.TenantStateName(ws.ID, env.PublicID, "big")
		big := &quota.Limit{Soft: 1 << 30, Hard: 1 << 31}
		if err := qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: tenant}, big); err != nil {
			b.Fatal(err)
		}
		if err := qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: kilolock.QuotaEnvironment, Target: env.PublicID}, big); err != nil {
			b.Fatal(err)
		}
		for i := range 19 { // the environment's other states
			name, _ := tenancy.TenantStateName(ws.ID, env.PublicID, fmt.Sprintf("other-%d", i))
			c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}, Upserts: []graph.Instance{benchInstance(b, 0, 0)}}
			if _, _, err := s.Commit(ctx, name, c); err != nil {
				b.Fatal(err)
			}
		}
		ok := true
		for _, bc := range []struct{ name, state string }{{"local", "big"}, {"tenant-limited", tenant}} {
			first := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "bench", Format: "compact"}}
			for i := range 10000 {
				first.Upserts = append(first.Upserts, benchInstance(b, i, 0))
			}
			v, _, err := s.Commit(ctx, bc.state, first)
			if err != nil {
				b.Fatal(err)
			}
			next := 10000 // the next instance to add
			for _, add := range []bool{false, true} {
				label := "change=2"
				if add {
					label = "add=1"
				}
				ok = ok && b.Run(fmt.Sprintf("%s/%s/%s", store, bc.name, label), func(b *testing.B) {
					for n := 0; b.Loop(); n++ {
						c := &kilolock.Commit{Parent: v.Number, Version: kilolock.Version{Serial: v.Serial + 1, Lineage: "bench", Format: "compact"}}
						c.Upserts = append(c.Upserts, benchInstance(b, n%10000, int(v.Serial)))
						if add {
							c.Upserts = append(c.Upserts, benchInstance(b, next, 0))
							next++
						} else {
							c.Upserts = append(c.Upserts, benchInstance(b, (n+5000)%10000, int(v.Serial)))
						}
						if v, _, err = s.Commit(ctx, bc.state, c); err != nil {
							b.Fatal(err)
						}
					}
					if want := next; add && v.Managed != want {
						b.Fatalf("the state counts %d managed instances, want %d", v.Managed, want)
					}
				})
			}
		}
		return ok
	})
}

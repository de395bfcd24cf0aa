package httpbackend

import (
	"context"
	"fmt"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// BenchmarkTenantQuery is what scoping a query to a tenant adds: the same
// statements run unscoped (the operator's) and scoped to one tenant.
// Tenants A and B hold a state of own=N instances each, beside C's of
// 10,000 (the rest of the world, which a tenant's query must not pay
// for). On SQLite a tenant's statement reads a copy of the columns it
// reads of its own rows (store/sqlite/tenantquery.go), kept for the
// connection's next statement of the same scope while the database does
// not change: "tenant" repeats A's statement (the copy is kept), "cold"
// takes turns between A and B (each statement copies). "count" copies no
// column, "one-row" the states' names, "all-rows" and "one-address" the
// attributes of every instance of the tenant.
func BenchmarkTenantQuery(b *testing.B) {
	ctx := context.Background()
	for _, be := range benchBackends {
		for _, own := range []int{1000, 10_000} {
			b.Run(fmt.Sprintf("%s/own=%d", be.name, own), func(b *testing.B) {
				st, err := be.open(b)
				if err != nil {
					b.Fatal(err)
				}
				e := kilolock.NewEngine(st, kilolock.Options{})
				for name, n := range map[string]int{"ws_a.env_a.net": own, "ws_b.env_b.net": own, "ws_c.env_c.net": 10_000} {
					values := map[string]string{}
					for i := range n {
						values[fmt.Sprintf("r%05d", i)] = fmt.Sprintf("v%d", i)
					}
					if _, err := e.Write(ctx, name, stateDoc(b, "lin", 1, values), kilolock.WriteOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				scopes := []tenancy.QueryScope{{Prefixes: []string{"ws_a.env_a."}}, {Prefixes: []string{"ws_b.env_b."}}}
				for _, q := range []struct{ name, sql string }{
					{"count", `SELECT count(*) FROM resources`},
					{"one-row", `SELECT count(*) FROM resources WHERE state LIKE 'ws\_%' ESCAPE '\'`},
					{"all-rows", `SELECT address, attributes ->> 'id' FROM resources WHERE state LIKE 'ws\_%' ESCAPE '\'`},
					{"one-address", `SELECT attributes FROM resources WHERE address = 'terraform_data.r00001'`},
				} {
					b.Run(q.name+"/operator", func(b *testing.B) {
						for b.Loop() {
							if _, err := e.Query(ctx, q.sql); err != nil {
								b.Fatal(err)
							}
						}
					})
					for _, run := range []struct {
						name  string
						turns int
					}{{"tenant", 1}, {"cold", 2}} {
						b.Run(q.name+"/"+run.name, func(b *testing.B) {
							i := 0
							for b.Loop() {
								res, err := tenancy.QueryScoped(ctx, e, scopes[i%run.turns], q.sql)
								if err != nil || len(res.Rows) == 0 {
									b.Fatal(res, err)
								}
								i++
							}
						})
					}
				}
			})
		}
	}
}

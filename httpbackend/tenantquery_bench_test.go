package httpbackend

import (
	"context"
	"fmt"
	"testing"

	"github.com/kilolock/kilolock"
)

// BenchmarkTenantQuery is what scoping a query to a tenant adds: the same
// statements run unscoped (the operator's) and scoped to one of two
// tenants, each holding a state of 1,000 instances.
func BenchmarkTenantQuery(b *testing.B) {
	ctx := context.Background()
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			st, err := be.open(b)
			if err != nil {
				b.Fatal(err)
			}
			e := kilolock.NewEngine(st, kilolock.Options{})
			for _, name := range []string{"ws_a.env_a.net", "ws_b.env_b.net"} {
				values := map[string]string{}
				for i := range 1000 {
					values[fmt.Sprintf("r%04d", i)] = fmt.Sprintf("v%d", i)
				}
				if _, err := e.Write(ctx, name, stateDoc(b, "lin", 1, values), kilolock.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			scope := kilolock.QueryScope{Prefixes: []string{"ws_a.env_a."}}
			for _, q := range []struct{ name, sql string }{
				{"one-row", `SELECT count(*) FROM resources WHERE state = 'ws_a.env_a.net'`},
				{"1000-rows", `SELECT address, attributes ->> 'id' FROM resources WHERE state = 'ws_a.env_a.net'`},
			} {
				b.Run(q.name+"/operator", func(b *testing.B) {
					for b.Loop() {
						if _, err := e.Query(ctx, q.sql); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(q.name+"/tenant", func(b *testing.B) {
					for b.Loop() {
						res, err := e.QueryScoped(ctx, scope, q.sql)
						if err != nil || len(res.Rows) == 0 {
							b.Fatal(res, err)
						}
					}
				})
			}
		})
	}
}

package history_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// longHistory writes a state of n instances (small attributes) and then
// versions-1 versions changing 2 instances each, committed through the
// store directly so that setting up 1,000 versions stays quick.
func longHistory(b *testing.B, st kilolock.Store, n, versions int) *kilolock.Engine {
	b.Helper()
	ctx := context.Background()
	e := kilolock.NewEngine(st, kilolock.Options{})
	if _, err := e.Write(ctx, "big", graphtest.Generate(n, 64, graph.FormatCompact), kilolock.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	g, _, err := e.Graph(ctx, "big")
	if err != nil {
		b.Fatal(err)
	}
	for v := 2; v <= versions; v++ {
		c := &kilolock.Commit{Parent: int64(v - 1), Version: kilolock.Version{
			Serial: uint64(v), Lineage: g.Lineage, TerraformVersion: g.TerraformVersion, Source: kilolock.SourcePush,
			Format: g.Format.String(), Instances: n, Changed: 2,
		}}
		for _, i := range enginetest.Changed(v, n) {
			in := g.Instances[i]
			obj := append([]byte(`{"kl_bench":`+strconv.Itoa(v)+`,`), in.Object[1:]...)
			up, err := graph.NewInstance(in.Resource, obj)
			if err != nil {
				b.Fatal(err)
			}
			c.Upserts = append(c.Upserts, up)
		}
		if _, _, err := st.Commit(ctx, "big", c); err != nil {
			b.Fatalf("version %d: %v", v, err)
		}
	}
	return kilolock.NewEngine(st, kilolock.Options{})
}

// BenchmarkHistoryOps measures what `kl history --limit 20`, `kl diff @2
// @latest` and `kl export @1` cost the server on a 10,000-instance state
// with 100 and with 1,000 versions of 2 changes each, on both stores: the
// figures must not grow with the history beyond index lookups.
func BenchmarkHistoryOps(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
		for _, versions := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/versions=%d", store, versions), func(b *testing.B) {
				e := longHistory(b, open(b), n, versions)
				b.Run("history20", func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if h, err := e.History(ctx, "big", kilolock.HistoryOptions{Limit: 20}); err != nil || len(h) != 20 {
							b.Fatal(len(h), err)
						}
					}
				})
				b.Run("diff@2-latest", func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						d, err := history.Diff(ctx, e, "big", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 2}, kilolock.Latest)
						if err != nil || len(d.Changed) == 0 {
							b.Fatal(err)
						}
					}
				})
				b.Run("export@1", func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if doc, err := history.Export(ctx, e, "big", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}); err != nil || len(doc) == 0 {
							b.Fatal(err)
						}
					}
				})
				b.Run("resolve-serial", func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if _, err := e.ResolveVersion(ctx, "big", kilolock.VersionRef{Kind: kilolock.RefSerial, N: 50}); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
		return true
	})
}

// BenchmarkAddressHistory measures `kl history --address` of an instance
// that 50 versions of a 10,000-instance state changed, on both stores: it
// reads the intervals of the address and the outputs of the versions
// either side of each change, so its cost must not grow with the state.
func BenchmarkAddressHistory(b *testing.B) {
	const n, changes = 10000, 50
	ctx := context.Background()
	enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
		b.Run(store, func(b *testing.B) {
			e := kilolock.NewEngine(open(b), kilolock.Options{})
			doc := graphtest.Generate(n, 64, graph.FormatCompact)
			if _, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
			g, _, err := e.Graph(ctx, "big")
			if err != nil {
				b.Fatal(err)
			}
			in := g.Instances[0]
			for v := range changes {
				g.Serial++
				g.Instances[0].Object = append([]byte(`{"kl_bench":`+strconv.Itoa(v)+`,`), in.Object[1:]...)
				if _, err := e.Write(ctx, "big", g.Render(g.Format), kilolock.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				h, err := history.AddressHistory(ctx, e, "big", in.Address())
				if err != nil || len(h) != changes+1 {
					b.Fatalf("%d changes, %v; want %d", len(h), err, changes+1)
				}
			}
		})
		return true
	})
}

package kilolock_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
)

// sensitiveFleet is a 10,000-instance state (about 1 KB each) in which
// every tenth instance marks its input sensitive (its output repeats it):
// 1,000 sealed payloads when encryption is on.
func sensitiveFleet(tb testing.TB) []byte {
	tb.Helper()
	s, err := graphtest.Decode(graphtest.Generate(10000, 1024, graph.FormatCompact))
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for ri := range s.Resources {
		for ii := range s.Resources[ri].Instances {
			if n%10 == 0 {
				s.Resources[ri].Instances[ii].SensitiveAttributes = json.RawMessage(`[[{"type":"get_attr","value":"input"}]]`)
			}
			n++
		}
	}
	return graphtest.Encode(s, graph.FormatCompact)
}

// BenchmarkAtRest measures what encryption at rest adds to a POST and a
// GET of the 10,000-instance sensitiveFleet, on both stores, with no key
// (plain) and with one (sealed): the first POST (every payload, 1,000
// sealed), a POST changing 2 instances (one of them sensitive), a cold GET
// (a kld that has not cached the version: every payload read and 1,000
// opened) and a warm GET (served from the cache, as most GETs are).
func BenchmarkAtRest(b *testing.B) {
	ctx := context.Background()
	doc := sensitiveFleet(b)
	ring, err := keyring.Parse([]byte(keyring.Generate()))
	if err != nil {
		b.Fatal(err)
	}
	opens := []struct {
		store string
		open  func(b *testing.B, r *keyring.Ring) kilolock.Store
	}{
		{"sqlite", func(b *testing.B, r *keyring.Ring) kilolock.Store {
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "kilolock.db"), sqlite.WithKeyring(r))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(b *testing.B, r *keyring.Ring) kilolock.Store {
			st, err := postgres.Open(ctx, testpg.URL(b), postgres.WithKeyring(r))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		}},
	}
	for _, o := range opens {
		for _, mode := range []struct {
			name string
			ring *keyring.Ring
		}{{"plain", nil}, {"sealed", ring}} {
			b.Run(o.store+"/"+mode.name, func(b *testing.B) {
				st := o.open(b, mode.ring)
				e := kilolock.NewEngine(st, kilolock.Options{})
				start := time.Now()
				if _, err := e.Write(ctx, "fleet", doc, kilolock.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
				first := time.Since(start)
				cur := doc
				b.Run("post2", func(b *testing.B) {
					for n := 0; b.Loop(); n++ {
						b.StopTimer()
						cur = graphtest.Change(cur, []int{(10 * n) % 10000, (10*n + 3) % 10000}, graph.FormatCompact)
						b.StartTimer()
						if _, err := e.Write(ctx, "fleet", cur, kilolock.WriteOptions{}); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(first.Milliseconds()), "first-post-ms")
				})
				b.Run("get-cold", func(b *testing.B) {
					for b.Loop() {
						d, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "fleet")
						if err != nil || len(d.Bytes) != len(cur) {
							b.Fatalf("GET = %d bytes, %v; want %d", len(d.Bytes), err, len(cur))
						}
					}
				})
				b.Run("get-warm", func(b *testing.B) {
					for b.Loop() {
						if _, err := e.Read(ctx, "fleet"); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

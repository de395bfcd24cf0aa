package kilolock_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestCacheFleet: under a fleet of states that outgrows it, the cache of
// current versions stays within its budget after every request, lets go
// of documents before indexes, and a state it let go of, whole or its
// document only, is still written and read exactly: its next POST costs
// what it changes (2 instances), its GET answers the bytes posted, a
// re-POST of those bytes adds nothing. On both stores.
func TestCacheFleet(t *testing.T) {
	eachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			base := graphtest.Generate(60, 200, graph.FormatIndent)
			series, err := graphtest.NewSeries(base)
			if err != nil {
				t.Fatal(err)
			}
			// Room for the indexes of about half the fleet, or the
			// documents of a few states.
			const states = 40
			budget := int64(6 * len(base))
			e := kilolock.NewEngine(open(t), kilolock.Options{CacheBytes: budget})
			docs := make([][]byte, states)
			name := func(i int) string { return fmt.Sprintf("fleet-%02d", i) }
			within := func(what string) {
				t.Helper()
				if s := e.CacheStats(); s.Bytes > s.Budget {
					t.Fatalf("%s: the cache holds %d bytes, over its budget of %d", what, s.Bytes, s.Budget)
				}
			}
			post := func(i int, doc []byte, wantChanged int) {
				t.Helper()
				res, err := e.Write(ctx, name(i), doc, kilolock.WriteOptions{})
				if err != nil {
					t.Fatalf("POST %s: %v", name(i), err)
				}
				if wantChanged == 0 && !res.Unchanged || wantChanged > 0 && (res.Unchanged || res.Version.Changed != wantChanged || res.Version.Added+res.Version.Removed != 0) {
					t.Fatalf("POST %s: unchanged %v, changed %d (+%d -%d); want %d changed", name(i), res.Unchanged, res.Version.Changed, res.Version.Added, res.Version.Removed, wantChanged)
				}
				docs[i] = doc
				within("POST " + name(i))
			}
			get := func(i int) {
				t.Helper()
				d, err := e.Read(ctx, name(i))
				if err != nil {
					t.Fatalf("GET %s: %v", name(i), err)
				}
				if !bytes.Equal(d.Bytes, docs[i]) {
					t.Fatalf("GET %s: %d bytes that are not the %d posted", name(i), len(d.Bytes), len(docs[i]))
				}
				within("GET " + name(i))
			}
			next := func(i int, rng *rand.Rand) []byte {
				a := rng.IntN(series.Len())
				doc, err := series.Edit(docs[i], a, (a+1+rng.IntN(series.Len()-1))%series.Len())
				if err != nil {
					t.Fatal(err)
				}
				return doc
			}
			for i := range states {
				post(i, base, -1)
			}
			// The first states are the least recently used: the fleet's
			// newest keep their documents, the oldest lost theirs, and
			// the very oldest went whole.
			if idx, doc := kilolock.CachedParts(e, name(0)); idx || doc {
				t.Fatalf("after %d states: the first is still cached (index %v, document %v)", states, idx, doc)
			}
			lean := -1
			for i := range states {
				if idx, doc := kilolock.CachedParts(e, name(i)); idx && !doc {
					lean = i
					break
				}
			}
			if idx, doc := kilolock.CachedParts(e, name(states-1)); !idx || !doc || lean < 0 {
				t.Fatalf("after %d states: the last keeps index %v, document %v; a state keeps only its index: %v", states, idx, doc, lean >= 0)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			// A state kept whole no more, then one that kept its index.
			for _, i := range []int{0, lean} {
				post(i, docs[i], 0)
				get(i)
				post(i, next(i, rng), 2)
				get(i)
			}
			for range 300 {
				i := rng.IntN(states)
				switch rng.IntN(4) {
				case 0:
					get(i)
				case 1:
					post(i, docs[i], 0)
				default:
					post(i, next(i, rng), 2)
				}
			}
			s := e.CacheStats()
			if s.Evictions == 0 || s.DocumentEvictions == 0 || s.Misses == 0 || s.Hits == 0 || s.States >= states || s.Documents >= s.States {
				t.Errorf("the fleet did not press the cache: %+v", s)
			}
			for i := range states {
				get(i)
			}
		})
	})
}

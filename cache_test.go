package kilolock_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// TestCacheFleet: under a fleet of states that outgrows it, the cache of
// current versions stays within its budget after every request, lets go
// of documents before indexes, and a state it let go of, whole or its
// document only, is still written and read exactly: its next POST costs
// what it changes (2 instances), its GET answers the bytes posted, a
// re-POST of those bytes adds nothing. A POST on a state let go of whole
// reads only its current version's hashes, with every instance's
// spelling (which its parse takes instead of hashing), and the 2
// instances it changes (kilolock.IndexReader), never the whole version.
// On both stores.
func TestCacheFleet(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
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
			reads := newReadCounter(t, open(t))
			e := kilolock.NewEngine(reads, kilolock.Options{CacheBytes: budget})
			docs := make([][]byte, states)
			name := func(i int) string { return fmt.Sprintf("fleet-%02d", i) }
			within := func(what string) {
				t.Helper()
				if s := e.CacheStats(); s.Bytes > s.Budget {
					t.Fatalf("%s: the cache holds %d bytes, over its budget of %d", what, s.Bytes, s.Budget)
				}
			}
			cold := 0 // POSTs on states let go of whole
			post := func(i int, doc []byte, wantChanged int) {
				t.Helper()
				cached, _ := kilolock.CachedParts(e, name(i))
				before := reads.counts()
				res, err := e.Write(ctx, name(i), doc, kilolock.WriteOptions{})
				if err != nil {
					t.Fatalf("POST %s: %v", name(i), err)
				}
				if wantChanged == 0 && !res.Unchanged || wantChanged > 0 && (res.Unchanged || res.Version.Changed != wantChanged || res.Version.Added+res.Version.Removed != 0) {
					t.Fatalf("POST %s: unchanged %v, changed %d (+%d -%d); want %d changed", name(i), res.Unchanged, res.Version.Changed, res.Version.Added, res.Version.Removed, wantChanged)
				}
				if d := reads.counts().minus(before); wantChanged > 0 && !cached && (d.whole != 0 || d.hashes != 1 || d.some != 1 || d.ids != wantChanged || d.spelled != 60) {
					t.Fatalf("POST %s, not cached: read %d whole versions, %d versions' hashes (%d spellings), %d times %d instances; want the hashes once, with the 60 instances' spellings, and the %d changed instances once", name(i), d.whole, d.hashes, d.spelled, d.some, d.ids, wantChanged)
				}
				if d := reads.counts().minus(before); cached && wantChanged > 0 && d.whole+d.hashes+d.some != 0 {
					t.Fatalf("POST %s, its index cached: read %+v from the store", name(i), d)
				}
				if !cached && wantChanged > 0 {
					cold++
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
			if s.Evictions == 0 || s.DocumentEvictions == 0 || s.Misses == 0 || s.Hits == 0 || s.States >= states || s.Documents >= s.States || cold == 0 {
				t.Errorf("the fleet did not press the cache: %+v, %d POSTs on states let go of whole", s, cold)
			}
			for i := range states {
				get(i)
			}
		})
	})
}

// readCounter is a Store that counts how its versions are read: whole
// (Snapshot, SnapshotEach), or by the IndexReader's parts.
type readCounter struct {
	kilolock.Store
	ir kilolock.IndexReader
	ss kilolock.SnapshotStreamer

	mu sync.Mutex
	n  readCounts
}

// readCounts counts versions read whole, versions' hashes read, reads of
// some instances and the instances they asked for, the spellings the
// hashes came with, versions' outputs read, and states read (State).
type readCounts struct{ whole, hashes, some, ids, spelled, outputs, states int }

func (a readCounts) minus(b readCounts) readCounts {
	return readCounts{a.whole - b.whole, a.hashes - b.hashes, a.some - b.some, a.ids - b.ids, a.spelled - b.spelled, a.outputs - b.outputs, a.states - b.states}
}

func newReadCounter(t *testing.T, s kilolock.Store) *readCounter {
	ir, ok1 := s.(kilolock.IndexReader)
	ss, ok2 := s.(kilolock.SnapshotStreamer)
	if !ok1 || !ok2 {
		t.Fatalf("%T is no IndexReader and SnapshotStreamer", s)
	}
	return &readCounter{Store: s, ir: ir, ss: ss}
}

func (r *readCounter) counts() readCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *readCounter) count(f func(*readCounts)) {
	r.mu.Lock()
	f(&r.n)
	r.mu.Unlock()
}

func (*readCounter) LeanUpserts() {}

func (r *readCounter) Snapshot(ctx context.Context, name string, number int64) (*kilolock.Snapshot, error) {
	r.count(func(n *readCounts) { n.whole++ })
	return r.Store.Snapshot(ctx, name, number)
}

func (r *readCounter) SnapshotEach(ctx context.Context, name string, number int64, each func(*kilolock.Instance) error) (*kilolock.Snapshot, error) {
	r.count(func(n *readCounts) { n.whole++ })
	return r.ss.SnapshotEach(ctx, name, number, each)
}

func (r *readCounter) State(ctx context.Context, name string) (*kilolock.State, error) {
	r.count(func(n *readCounts) { n.states++ })
	return r.Store.State(ctx, name)
}

func (r *readCounter) SnapshotOutputs(ctx context.Context, name string, number int64) (*kilolock.Snapshot, error) {
	r.count(func(n *readCounts) { n.outputs++ })
	return r.ir.SnapshotOutputs(ctx, name, number)
}

func (r *readCounter) SnapshotHashes(ctx context.Context, name string, number int64) (*kilolock.Snapshot, map[string]graph.Hash, map[graph.Hash]graph.Spelled, error) {
	snap, hashes, spelled, err := r.ir.SnapshotHashes(ctx, name, number)
	r.count(func(n *readCounts) { n.hashes++; n.spelled += len(spelled) })
	return snap, hashes, spelled, err
}

func (r *readCounter) SnapshotSome(ctx context.Context, name string, number int64, ids []string) ([]kilolock.Instance, error) {
	r.count(func(n *readCounts) { n.some++; n.ids += len(ids) })
	return r.ir.SnapshotSome(ctx, name, number, ids)
}

// TestColdWritesExact: a write on a state no cache holds (each through a
// fresh engine, which diffs it against the hashes an IndexReader reads)
// does what the same write does through an engine that cached the state:
// the same changes counted, a respelled object no change, instances added
// and removed, outputs changed, an optimistic write merged onto another
// holder's; and every version reads back as the warm engine's, byte for
// byte, the posted bytes for a POST. On both stores.
func TestColdWritesExact(t *testing.T) {
	ctx := context.Background()
	enginetest.EachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(store, func(t *testing.T) {
			warmStore, coldStore := open(t), newReadCounter(t, open(t))
			warm := kilolock.NewEngine(warmStore, kilolock.Options{})
			const n = 120
			v1 := graphtest.Generate(n, 300, graph.FormatIndent)
			// v2: 2 changed; v3: re-serialized by Go's encoding/json on
			// a map (every object respelled) with 3 changed; v4: the
			// CLI's layout again, 1 added, 2 removed, an output
			// changed, another added; v5: a change back to v1's bytes.
			v2 := graphtest.Change(v1, []int{10, 90}, graph.FormatIndent)
			v3 := graphtest.GoMap(t, graphtest.Change(v2, []int{1, 2, 3}, graph.FormatIndent))
			s4, err := graphtest.Decode(graphtest.Change(v2, []int{1, 2, 3}, graph.FormatIndent))
			if err != nil {
				t.Fatal(err)
			}
			s4.Serial++
			last := &s4.Resources[len(s4.Resources)-1]
			added := *last
			added.Name += "_added"
			added.Instances = added.Instances[:1]
			s4.Resources[0].Instances = s4.Resources[0].Instances[1:]
			if len(s4.Resources[0].Instances) == 0 {
				s4.Resources = s4.Resources[1:]
			}
			s4.Resources[len(s4.Resources)-1].Instances = s4.Resources[len(s4.Resources)-1].Instances[1:]
			s4.Resources = append(s4.Resources, added)
			if s4.Outputs == nil {
				s4.Outputs = map[string]graphtest.OutputV4{}
			}
			s4.Outputs["cold"] = graphtest.OutputV4{Value: []byte(`"x"`), Type: []byte(`"string"`)}
			v4 := graphtest.Encode(s4, graph.FormatIndent)
			s5, _ := graphtest.Decode(v4)
			s5.Serial++
			s5.Outputs["cold"] = graphtest.OutputV4{Value: []byte(`"y"`), Type: []byte(`"string"`)}
			v5 := graphtest.Encode(s5, graph.FormatIndent)
			for i, doc := range [][]byte{v1, v2, v3, v4, v5} {
				want := enginetest.Write(t, warm, "s", doc)
				before := coldStore.counts()
				got := enginetest.Write(t, kilolock.NewEngine(coldStore, kilolock.Options{}), "s", doc)
				d := coldStore.counts().minus(before)
				wv, gv := want.Version, got.Version
				if gv.Added != wv.Added || gv.Changed != wv.Changed || gv.Removed != wv.Removed || gv.Instances != wv.Instances || gv.Serial != wv.Serial || got.Stats.Rows != want.Stats.Rows {
					t.Fatalf("write %d, cold: +%d ~%d -%d of %d, serial %d, %d rows; warm: +%d ~%d -%d of %d, serial %d, %d rows",
						i+1, gv.Added, gv.Changed, gv.Removed, gv.Instances, gv.Serial, got.Stats.Rows, wv.Added, wv.Changed, wv.Removed, wv.Instances, wv.Serial, want.Stats.Rows)
				}
				if i > 0 && (d.whole != 0 || d.hashes != 1) {
					t.Fatalf("write %d, cold: read %+v; want the hashes once and no whole version", i+1, d)
				}
				if i == 1 && d.spelled != n {
					t.Fatalf("write 2, cold: %d spellings read with the hashes; want v1's %d", d.spelled, n)
				}
				assertServes(t, warm, warmStore, "s", wv.Number, doc)
				assertServes(t, kilolock.NewEngine(coldStore, kilolock.Options{}), coldStore, "s", gv.Number, doc)
			}
			if w := enginetest.Write(t, warm, "s", v5); !w.Unchanged {
				t.Fatal("a warm re-POST of the same bytes added a version")
			}
			if c := enginetest.Write(t, kilolock.NewEngine(coldStore, kilolock.Options{}), "s", v5); !c.Unchanged {
				t.Fatal("a cold re-POST of the same bytes added a version")
			}

			// Optimistic: two holders read v5; a commits 2 changes, then
			// b (another 2) is merged onto a's, each through a fresh
			// engine; the warm engine does the same on its store.
			va := graphtest.Change(v5, []int{5, 6}, graph.FormatIndent)
			vb := graphtest.Change(v5, []int{50, 51}, graph.FormatIndent)
			var merged [2][]byte
			for k, e := range []func() *kilolock.Engine{
				func() *kilolock.Engine { return warm },
				func() *kilolock.Engine { return kilolock.NewEngine(coldStore, kilolock.Options{}) },
			} {
				if err := e().SetLockMode(ctx, "opt", kilolock.LockOptimistic); err != nil {
					t.Fatal(err)
				}
				enginetest.Write(t, e(), "opt", v5)
				lockFor(t, e(), "opt", "a")
				lockFor(t, e(), "opt", "b")
				if _, err := e().Write(ctx, "opt", va, kilolock.WriteOptions{LockID: "a"}); err != nil {
					t.Fatal(err)
				}
				res, err := e().Write(ctx, "opt", vb, kilolock.WriteOptions{LockID: "b"})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Version.Merged || res.Version.Changed != 2 {
					t.Fatalf("engine %d: b's write merged %v, ~%d; want merged, 2 changed", k, res.Version.Merged, res.Version.Changed)
				}
				d, err := e().Read(ctx, "opt")
				if err != nil {
					t.Fatal(err)
				}
				merged[k] = d.Bytes
			}
			if !bytes.Equal(merged[0], merged[1]) {
				t.Fatalf("the merge through fresh engines reads back as %d bytes that are not the warm engine's %d", len(merged[1]), len(merged[0]))
			}
			g, err := graph.Parse(merged[1])
			if err != nil {
				t.Fatal(err)
			}
			ga, _ := graph.Parse(va)
			gb, _ := graph.Parse(vb)
			for _, k := range []int{5, 6} {
				if !g.Instances[k].Equal(&ga.Instances[k]) {
					t.Fatalf("the merge lost a's change of instance %d", k)
				}
			}
			for _, k := range []int{50, 51} {
				if !g.Instances[k].Equal(&gb.Instances[k]) {
					t.Fatalf("the merge lost b's change of instance %d", k)
				}
			}
		})
	})
}

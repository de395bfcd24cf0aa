package kilolock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/store/sqlite"
)

var (
	modelSeed   = flag.Uint64("model.seed", 0, "seed of TestOptimisticModel (0: from the clock)")
	modelRounds = flag.Int("model.rounds", 10000, "interleavings TestOptimisticModel runs (300 with -short)")
)

// modelState is an optimistic state as the sequential model sees it: the
// value of each instance key that exists.
type modelState = graphtest.Values

// modelWriter is one simulated `tofu apply` under an optimistic lock.
type modelWriter struct {
	name      string
	lockID    string
	noLock    bool       // a -lock=false writer: one write, no lock
	base      modelState // what it read when it locked
	baseSer   uint64
	local     modelState // base plus its own changes so far
	posts     int        // checkpoints made
	maxPosts  int
	since     int // index into the commit log when it locked
	done      bool
	committed bool
}

// commitRecord is one committed version in the model: who, and which keys
// really changed value.
type commitRecord struct {
	writer string
	keys   map[string]bool
}

// TestOptimisticModel runs thousands of random interleavings of optimistic
// writers — random disjoint and overlapping write sets, several checkpoints
// each, random unlocks and aborts, and lock-less writers — against the real
// engine and SQLite store, and checks each step against a sequential model:
// no lost update, a 409 only when write sets truly intersect, and every
// committed write present in the final state.
func TestOptimisticModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	rounds := *modelRounds
	if testing.Short() && rounds > 300 {
		rounds = 300
	}
	t.Logf("seed %d (rerun with -model.seed=%d), %d interleavings", seed, seed, rounds)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	// tmpfs keeps fsync cheap; the store and engine are the real ones.
	dir := t.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "kl-model-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "model.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := kilolock.NewEngine(st, kilolock.Options{DefaultLockMode: kilolock.LockOptimistic})

	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}

	const stateName = "model"
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("r%02d", i)
	}
	current := modelState{}
	for _, k := range keys[:12] {
		current[k] = "0"
	}
	var serial uint64 = 1
	if _, err := e.Write(ctx, stateName, modelDoc(serial, current), kilolock.WriteOptions{}); err != nil {
		fail("initial write: %v", err)
	}
	var log []commitRecord
	stats := map[string]int{}

	for round := 0; round < rounds; round++ {
		nw := 2 + rng.IntN(3)
		writers := make([]*modelWriter, nw)
		for i := range writers {
			writers[i] = &modelWriter{
				name:     fmt.Sprintf("w%d.%d", round, i),
				lockID:   fmt.Sprintf("lock-%d-%d", round, i),
				noLock:   rng.IntN(10) == 0,
				maxPosts: 1 + rng.IntN(3),
			}
			if writers[i].noLock {
				writers[i].maxPosts = 1
			}
		}
		// The schedule: each writer starts (locks and reads), posts up to
		// maxPosts checkpoints, then unlocks or aborts, interleaved at
		// random.
		started := map[*modelWriter]bool{}
		for {
			var live []*modelWriter
			for _, w := range writers {
				if !w.done {
					live = append(live, w)
				}
			}
			if len(live) == 0 {
				break
			}
			w := live[rng.IntN(len(live))]
			if !started[w] {
				started[w] = true
				w.base, w.local = maps.Clone(current), maps.Clone(current)
				w.baseSer, w.since = serial, len(log)
				if !w.noLock {
					if _, err := e.Lock(ctx, stateName, kilolock.LockInfo{ID: w.lockID, Who: w.name, Operation: "OperationTypeApply"}); err != nil {
						fail("round %d: optimistic lock %s: %v", round, w.name, err)
					}
				}
				continue
			}
			if w.posts == w.maxPosts || (w.posts > 0 && rng.IntN(8) == 0) {
				// Finish: unlock, or abort (the lock is left behind).
				if !w.noLock && rng.IntN(6) != 0 {
					if _, err := e.Unlock(ctx, stateName, w.lockID, false); err != nil {
						fail("round %d: unlock %s: %v", round, w.name, err)
					}
				}
				w.done = true
				continue
			}

			// A checkpoint: change 1-3 keys (set, add or delete), post.
			for n := 1 + rng.IntN(3); n > 0; n-- {
				k := keys[rng.IntN(len(keys))]
				if _, ok := w.local[k]; ok && rng.IntN(5) == 0 {
					delete(w.local, k)
				} else {
					w.local[k] = fmt.Sprintf("%s.%d", w.name, w.posts)
				}
			}
			w.posts++
			docSerial := w.baseSer + uint64(w.posts)

			// What the model expects.
			others := map[string]string{}
			for _, c := range log[w.since:] {
				if c.writer != w.name {
					for k := range c.keys {
						others[k] = c.writer
					}
				}
			}
			writeSet := map[string]bool{}
			for _, k := range keys {
				if !graphtest.Same(w.local, w.base, k) {
					writeSet[k] = true
				}
			}
			var wantConflict []string
			next := maps.Clone(current)
			changed := map[string]bool{}
			if w.noLock {
				// Defined behaviour: a lock-less write is a fast-forward,
				// accepted only when no version was committed since it read.
				// A byte-identical re-post of the current version is
				// a no-op, whoever wrote it first.
				identical := docSerial == serial && maps.Equal(w.local, current)
				if serial != w.baseSer && !identical {
					wantConflict = []string{"<stale>"}
				} else {
					next = maps.Clone(w.local)
				}
			} else {
				for _, k := range keys {
					if graphtest.Same(w.local, current, k) {
						continue
					}
					if _, touched := others[k]; touched {
						if !graphtest.Same(w.local, w.base, k) {
							wantConflict = append(wantConflict, k)
						}
						continue
					}
					graphtest.SetKey(next, w.local, k)
				}
			}
			for _, k := range keys {
				if !graphtest.Same(next, current, k) {
					changed[k] = true
				}
			}

			opts := kilolock.WriteOptions{LockID: w.lockID}
			if w.noLock {
				opts.LockID = ""
			}
			res, err := e.Write(ctx, stateName, modelDoc(docSerial, w.local), opts)
			var ce *kilolock.ConflictError
			switch {
			case len(wantConflict) > 0:
				if !errors.As(err, &ce) {
					fail("round %d: %s (serial %d, read at %d, model at %d) wrote %v over %v (others since its base: %v): got %v, want a conflict on %v", round, w.name, docSerial, w.baseSer, serial, sortedKeys(writeSet), sortedKeys(mapKeys(others)), others, err, wantConflict)
				}
				if !w.noLock {
					for _, a := range ce.Addresses {
						k := strings.TrimPrefix(a, "terraform_data.")
						if !writeSet[k] || others[k] == "" {
							fail("round %d: false conflict on %s for %s: not in both write sets (mine %v, others %v)", round, a, w.name, sortedKeys(writeSet), others)
						}
					}
					if got := trimAddrs(ce.Addresses); !slices.Equal(got, wantConflict) {
						fail("round %d: conflict on %v, want %v", round, got, wantConflict)
					}
				}
				stats["conflict"]++
				// A failed apply stops; its lock goes with it (or not).
				if !w.noLock && rng.IntN(2) == 0 {
					if _, err := e.Unlock(ctx, stateName, w.lockID, false); err != nil {
						fail("round %d: unlock after conflict: %v", round, err)
					}
				}
				w.done = true
				continue
			case err != nil:
				fail("round %d: %s wrote %v (others since base %v): unexpected %v", round, w.name, sortedKeys(writeSet), others, err)
			}
			if len(changed) > 0 {
				log = append(log, commitRecord{writer: w.name, keys: changed})
			}
			if res.Version.Merged {
				stats["merge"]++
			} else {
				stats["direct"]++
			}
			if !res.Unchanged && res.Version.Serial <= serial {
				fail("round %d: %s committed serial %d, not above the previous %d", round, w.name, res.Version.Serial, serial)
			}
			current = next
			serial = res.Version.Serial
			g, _, err := e.Graph(ctx, stateName)
			if err != nil {
				fail("round %d: read back: %v", round, err)
			}
			if got := stateOf(g); !maps.Equal(got, current) {
				fail("round %d after %s: stored %v, model %v", round, w.name, got, current)
			}
		}
		// Aborted applies leave locks behind: clear them, as an operator
		// would with force-unlock.
		if _, err := e.Unlock(ctx, stateName, "", true); err != nil {
			fail("round %d: force unlock: %v", round, err)
		}
	}
	// Every committed write is in the final state as the model says, and a
	// fresh engine (rendering from the rows) agrees.
	g, _, err := kilolock.NewEngine(st, kilolock.Options{}).Graph(ctx, stateName)
	if err != nil {
		fail("final read: %v", err)
	}
	if got := stateOf(g); !maps.Equal(got, current) {
		fail("final state %v, model %v", got, current)
	}
	t.Logf("commits: %d direct, %d merged, %d conflicts", stats["direct"], stats["merge"], stats["conflict"])
	if stats["merge"] == 0 || stats["conflict"] == 0 {
		t.Errorf("the schedule exercised no merge or no conflict: %v", stats)
	}
}

func mapKeys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func trimAddrs(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = strings.TrimPrefix(a, "terraform_data.")
	}
	sort.Strings(out)
	return out
}

// modelDoc renders a model state as OpenTofu writes it.
func modelDoc(serial uint64, s modelState) []byte {
	return graphtest.ValuesDoc(serial, "model-lineage", s)
}

// stateOf reads the model's view back out of a stored graph.
func stateOf(g *kilolock.Graph) modelState { return graphtest.ValuesOf(g) }

package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kilolock/kilolock"
)

// lockCall is one Lock or Unlock of CheckLockModel and its answer, with
// the moments (a shared counter) it was called and answered: it took
// effect, if at all, in between.
type lockCall struct {
	state      string
	unlock     bool
	id         string // "" with force
	force      bool
	start, end int64
	err        error
	released   []string
}

// CheckLockModel runs writers goroutines, each doing random exclusive
// Locks and Unlocks (of its own lock, of an id no one holds, forced) on a
// few states of s at once, and checks every answer against a model that
// holds in some order of the calls consistent with their moments: a lock
// is released at most once and only after it was taken; two locks of a
// state are never held at one moment; every ErrLocked names a lock held
// at some moment of that call; an unlock of an id no one held releases
// nothing; a writer's own unlock fails only when a forced one took its
// lock. It returns what each state is left holding (a lock id, or ""),
// which s's State agrees with.
func CheckLockModel(t testing.TB, s kilolock.Store, seed uint64) map[string]string {
	t.Helper()
	ctx := context.Background()
	const writers, calls, states = 8, 60, 3
	names := make([]string, states)
	for i := range names {
		names[i] = fmt.Sprintf("model-%d", i)
		lock(t, s, names[i], "setup", kilolock.LockExclusive)
		if _, err := s.Unlock(ctx, names[i], "setup", kilolock.UnlockOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var clock atomic.Int64
	logs := make([][]lockCall, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			held := map[string]string{}
			for k := range calls {
				c := lockCall{state: names[r.IntN(states)]}
				switch p := r.IntN(100); {
				case p < 30 && held[c.state] != "":
					c.unlock, c.id = true, held[c.state]
					delete(held, c.state)
				case p < 45:
					c.unlock, c.id = true, fmt.Sprintf("nobody-%d-%d", w, k)
				case p < 55:
					c.unlock, c.force = true, true
				default:
					c.id = fmt.Sprintf("w%d-%d", w, k)
				}
				c.start = clock.Add(1)
				if c.unlock {
					var ls []kilolock.Lock
					ls, c.err = s.Unlock(ctx, c.state, c.id, kilolock.UnlockOptions{Force: c.force})
					for _, l := range ls {
						c.released = append(c.released, l.Info.ID)
					}
				} else {
					_, c.err = s.Lock(ctx, c.state, lockInfo(c.id, "model"), kilolock.LockOptions{})
					if c.err == nil {
						held[c.state] = c.id
					}
				}
				c.end = clock.Add(1)
				logs[w] = append(logs[w], c)
			}
		}()
	}
	wg.Wait()

	type span struct{ start, end int64 }
	taken := map[string]span{}    // lock id → its Lock
	released := map[string]span{} // lock id → the Unlock that released it
	forced := map[string]bool{}
	var all []lockCall
	for _, l := range logs {
		all = append(all, l...)
	}
	for _, c := range all {
		if !c.unlock && c.err == nil {
			taken[c.id] = span{c.start, c.end}
		}
	}
	stateOf := map[string]string{}
	for _, c := range all {
		if !c.unlock && c.err == nil {
			stateOf[c.id] = c.state
		}
		for _, id := range c.released {
			if _, again := released[id]; again {
				t.Errorf("lock %s of %s released twice", id, c.state)
			}
			released[id] = span{c.start, c.end}
			forced[id] = c.force
			if a, ok := taken[id]; !ok || a.start > c.end {
				t.Errorf("unlock of %s released %s, which was not taken before", c.state, id)
			}
		}
	}
	for _, c := range all {
		var locked *kilolock.LockedError
		var mismatch *kilolock.LockMismatchError
		_, own := taken[c.id]
		switch {
		case !c.unlock && c.err == nil:
		case !c.unlock && errors.As(c.err, &locked):
			h := locked.Holder.ID
			a, ok := taken[h]
			r, gone := released[h]
			if !ok || stateOf[h] != c.state || a.start > c.end || (gone && r.end < c.start) {
				t.Errorf("lock %s of %s refused, naming %s, which was not held then", c.id, c.state, h)
			}
		case c.force:
			if c.err != nil {
				t.Errorf("forced unlock of %s: %v", c.state, c.err)
			}
		case own && c.err == nil:
			if len(c.released) != 1 || c.released[0] != c.id {
				t.Errorf("unlock of %s by its holder %s released %v", c.state, c.id, c.released)
			}
		case own && errors.As(c.err, &mismatch):
			if !forced[c.id] {
				t.Errorf("unlock of %s by its holder %s refused (%v), and no forced unlock took its lock", c.state, c.id, c.err)
			}
		case c.unlock && !own && errors.As(c.err, &mismatch):
		default:
			t.Errorf("%+v: unexpected answer %v", c, c.err)
		}
	}
	// Two locks of a state: one was released before the other could
	// have been taken.
	ids := make([]string, 0, len(taken))
	for id := range taken {
		ids = append(ids, id)
	}
	for i, x := range ids {
		for _, y := range ids[i+1:] {
			if stateOf[x] != stateOf[y] {
				continue
			}
			rx, xGone := released[x]
			ry, yGone := released[y]
			if !(xGone && rx.start < taken[y].end) && !(yGone && ry.start < taken[x].end) {
				t.Errorf("locks %s and %s of %s held at one moment", x, y, stateOf[x])
			}
		}
	}
	left := map[string]string{}
	for _, name := range names {
		left[name] = ""
	}
	for id := range taken {
		if _, gone := released[id]; !gone {
			if prev := left[stateOf[id]]; prev != "" {
				t.Errorf("%s is left held by %s and %s", stateOf[id], prev, id)
			}
			left[stateOf[id]] = id
		}
	}
	CheckLocksLeft(t, s, left)
	return left
}

// CheckLocksLeft checks that each state of want holds the lock with the
// id it maps to, and no other ("": none).
func CheckLocksLeft(t testing.TB, s kilolock.Store, want map[string]string) {
	t.Helper()
	for name, id := range want {
		st := state(t, s, name)
		var got string
		for _, l := range st.Locks {
			got += l.Info.ID
		}
		if got != id {
			t.Errorf("%s holds %q, want %q", name, got, id)
		}
	}
}

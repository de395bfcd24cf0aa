package kilolock_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/internal/enginetest"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

var (
	reserveSeed  = flag.Uint64("reserve.seed", 0, "seed of TestReservationModel (0: from the clock)")
	reserveSteps = flag.Int("reserve.steps", 1500, "steps of each TestReservationModel run (300 with -short)")
)

// modelRun is an apply run as the sequential model sees it.
type modelRun struct {
	id      string
	res     []kilolock.Reservation
	status  kilolock.RunStatus // waiting, active or an end
	expires time.Time
	lease   time.Duration
}

func (r *modelRun) statusAt(now time.Time) kilolock.RunStatus {
	if !r.status.Ended() && !now.Before(r.expires) {
		return kilolock.RunExpired
	}
	return r.status
}

// TestReservationModel drives the real engine and store, on SQLite and on
// PostgreSQL, exclusive and optimistic, through random interleavings of
// apply runs (random read and write reservations on resources and on
// everything, random leases, acquisitions, renewals, ends, aborts and
// expiries), their writes inside and outside their reservations, plain
// locks and plain lock-less writes, with a clock the test moves. Each step
// is checked against a sequential model written from the rules in
// plain words: never two conflicting holders at once, all or nothing, a
// waiter acquires as soon as its blockers are gone or expired, a plain
// writer waits for runs and runs wait for it, a write touching another
// run's write reservation or leaving its own is refused and changes
// nothing, and every accepted write is in the final state.
func TestReservationModel(t *testing.T) {
	seed := *reserveSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	steps := *reserveSteps
	if testing.Short() && steps > 300 {
		steps = 300
	}
	t.Logf("seed %d (rerun with -reserve.seed=%d), %d steps", seed, seed, steps)
	enginetest.EachStore(t, func(t *testing.T, kind string, open func(testing.TB) kilolock.Store) bool {
		for _, mode := range []kilolock.LockMode{kilolock.LockExclusive, kilolock.LockOptimistic} {
			t.Run(kind+"/"+string(mode), func(t *testing.T) {
				runReservationModel(t, open(t), mode, seed, steps)
			})
		}
		return true
	})
}

const modelKeys = 6

func runReservationModel(t *testing.T, st kilolock.Store, mode kilolock.LockMode, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, uint64(len(mode))))
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	st.(interface{ SetClock(func() time.Time) }).SetClock(now)
	e := kilolock.NewEngine(st, kilolock.Options{Now: now, DefaultLockMode: mode})
	const name = "m"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// The state starts with every key.
	content := modelState{}
	for i := range modelKeys {
		content[fmt.Sprint("k", i)] = "v0"
	}
	serial := uint64(1)
	_, err := e.Write(ctx, name, modelDoc(serial, content), kilolock.WriteOptions{})
	must(err)
	must(e.Store().SetLockMode(ctx, name, mode))

	var (
		runs      []*modelRun
		plainLock string     // the plain write lock held, if any
		plainBase modelState // what it read
		baseSer   uint64
		gen       int
		seen      = map[string]int{} // outcomes met, logged: a run that met none proves little
	)
	key := func() string { return fmt.Sprint("k", rng.IntN(modelKeys)) }
	pattern := func(k string) reserve.Pattern { return reserve.MustParse("terraform_data." + k) }
	star := reserve.MustParse("*")
	active := func() []*modelRun {
		var out []*modelRun
		for _, r := range runs {
			if r.statusAt(clock) == kilolock.RunActive {
				out = append(out, r)
			}
		}
		return out
	}
	// blockersOf is the model's decision: what blocks run r now.
	blockersOf := func(r *modelRun) map[string]bool {
		out := map[string]bool{}
		if plainLock != "" && mode == kilolock.LockExclusive {
			out["plain:"+plainLock] = true
		}
		for _, o := range active() {
			if o == r {
				continue
			}
			for _, h := range o.res {
				for _, w := range r.res {
					if (h.Mode == reserve.Write || w.Mode == reserve.Write) && h.Pattern.Intersects(w.Pattern) {
						out[o.id+":"+h.Pattern.String()] = true
					}
				}
			}
		}
		return out
	}
	// writeCovered says which active run holds a write reservation on k.
	writeHolder := func(k string) *modelRun {
		p := pattern(k)
		for _, o := range active() {
			for _, h := range o.res {
				if h.Mode == reserve.Write && h.Pattern.Covers(p) {
					return o
				}
			}
		}
		return nil
	}
	// post writes content with the keys set to fresh values, under lockID,
	// and returns the error; on success the model takes the change.
	post := func(lockID string, keys []string) error {
		next := maps.Clone(content)
		gen++
		for _, k := range keys {
			next[k] = fmt.Sprint("g", gen)
		}
		_, err := e.Write(ctx, name, modelDoc(serial+1, next), kilolock.WriteOptions{LockID: lockID, Actor: "model"})
		if err == nil {
			content, serial = next, serial+1
		}
		return err
	}
	// postFromBase writes what a writer that read base sends: base with
	// the keys set; the engine merges it onto what others wrote since.
	postFromBase := func(lockID string, base modelState, baseSerial uint64, keys []string) error {
		doc := maps.Clone(base)
		gen++
		for _, k := range keys {
			doc[k] = fmt.Sprint("g", gen)
		}
		_, err := e.Write(ctx, name, modelDoc(baseSerial+1, doc), kilolock.WriteOptions{LockID: lockID, Actor: "model"})
		if err == nil {
			for _, k := range keys {
				content[k] = doc[k]
			}
			serial++
		}
		return err
	}
	reason := func(err error) string {
		var ce *kilolock.ConflictError
		var le *kilolock.LockedError
		switch {
		case err == nil:
			return "ok"
		case errors.As(err, &ce):
			return ce.Reason
		case errors.As(err, &le):
			return "locked"
		}
		return "error: " + err.Error()
	}

	for step := range steps {
		where := fmt.Sprintf("step %d (clock %s)", step, clock.Format("15:04:05"))
		switch a := rng.IntN(100); {
		case a < 15 && len(runs) < 5: // start a run
			var res []kilolock.Reservation
			for range 1 + rng.IntN(2) {
				p := pattern(key())
				if rng.IntN(12) == 0 {
					p = star
				}
				m := reserve.Read
				if rng.IntN(2) == 0 {
					m = reserve.Write
				}
				res = append(res, kilolock.Reservation{Pattern: p, Mode: m})
			}
			lease := time.Duration(5+rng.IntN(40)) * time.Second
			run, err := applyrun.StartRun(ctx, e, name, kilolock.RunRequest{Actor: "model", Reservations: res, Lease: lease})
			must(err)
			norm, _ := reserve.Normalize(res)
			runs = append(runs, &modelRun{id: run.ID, res: norm, status: kilolock.RunWaiting, expires: clock.Add(lease), lease: lease})
		case a < 40 && len(runs) > 0: // try to acquire
			r := runs[rng.IntN(len(runs))]
			_, bs, err := applyrun.AcquireRun(ctx, e, r.id)
			if s := r.statusAt(clock); s.Ended() {
				if !errors.As(err, new(*kilolock.RunEndedError)) {
					t.Fatalf("%s: acquiring %s run %s = %v, want RunEndedError", where, s, r.id, err)
				}
				continue
			}
			must(err)
			got := map[string]bool{}
			for _, b := range bs {
				if b.Run == "" {
					got["plain:"+b.LockID] = true
				} else {
					got[b.Run+":"+b.Pattern.String()] = true
				}
			}
			want := map[string]bool{}
			if r.status == kilolock.RunWaiting {
				want = blockersOf(r)
			}
			if !maps.Equal(got, want) {
				t.Fatalf("%s: run %s %v blocked by %v, the model says %v", where, r.id, r.res, sorted(got), sorted(want))
			}
			r.expires = clock.Add(r.lease)
			if len(want) == 0 {
				r.status = kilolock.RunActive
				seen["acquired"]++
			} else {
				seen["blocked"]++
			}
		case a < 48 && len(runs) > 0: // renew
			r := runs[rng.IntN(len(runs))]
			_, err := applyrun.RenewRun(ctx, e, r.id)
			if r.statusAt(clock).Ended() {
				if !errors.As(err, new(*kilolock.RunEndedError)) {
					t.Fatalf("%s: renewing ended run %s = %v", where, r.id, err)
				}
				seen["renew of an "+string(r.statusAt(clock))+" run"]++
				continue
			}
			must(err)
			r.expires = clock.Add(r.lease)
		case a < 58 && len(runs) > 0: // end or abort
			r := runs[rng.IntN(len(runs))]
			end := []kilolock.RunStatus{kilolock.RunSucceeded, kilolock.RunFailed, kilolock.RunAborted}[rng.IntN(3)]
			_, err := applyrun.EndRun(ctx, e, r.id, kilolock.RunEnd{Status: end, By: "model"})
			if r.statusAt(clock).Ended() {
				if !errors.As(err, new(*kilolock.RunEndedError)) {
					t.Fatalf("%s: ending ended run %s = %v", where, r.id, err)
				}
				continue
			}
			must(err)
			r.status = end
		case a < 72 && len(runs) > 0: // a run's CLI writes
			r := runs[rng.IntN(len(runs))]
			lockID := fmt.Sprint("run-lock-", step)
			_, err := applyrun.LockRun(ctx, e, name, r.id, kilolock.LockInfo{ID: lockID, Operation: "OperationTypeApply", Who: "model"})
			if r.statusAt(clock) != kilolock.RunActive {
				if err == nil {
					t.Fatalf("%s: a %s run %s took its lock", where, r.statusAt(clock), r.id)
				}
				continue
			}
			must(err)
			// Mostly what it reserved for writing, sometimes anything.
			var own []string
			for _, h := range r.res {
				if h.Mode == reserve.Write {
					if k, ok := strings.CutPrefix(h.Pattern.String(), "terraform_data."); ok {
						own = append(own, k)
					} else {
						own = append(own, key()) // "*"
					}
				}
			}
			pick := func() string {
				if len(own) > 0 && rng.IntN(4) != 0 {
					return own[rng.IntN(len(own))]
				}
				return key()
			}
			keys := []string{pick()}
			if rng.IntN(3) == 0 {
				keys = append(keys, pick())
			}
			want := "ok"
			for _, k := range keys {
				if writeHolder(k) != r {
					want = kilolock.ReasonOutOfScope
				}
			}
			before := maps.Clone(content)
			seen["run write "+want]++
			if got := reason(post(lockID, keys)); got != want {
				t.Fatalf("%s: run %s %v writing %v = %s, the model says %s", where, r.id, r.res, keys, got, want)
			}
			if want != "ok" && !maps.Equal(before, content) {
				t.Fatalf("%s: a refused write changed the model", where)
			}
			if _, err := e.Unlock(ctx, name, lockID, false); err != nil {
				t.Fatalf("%s: unlock of the run's lock: %v", where, err)
			}
		case a < 80 && plainLock == "": // a plain writer locks
			id := fmt.Sprint("plain-", step)
			_, err := e.Lock(ctx, name, kilolock.LockInfo{ID: id, Operation: "OperationTypeApply", Who: "plain"})
			want := mode == kilolock.LockOptimistic || len(active()) == 0
			if (err == nil) != want {
				t.Fatalf("%s: plain LOCK = %v; the model says granted=%v (%d runs active)", where, err, want, len(active()))
			}
			if err == nil {
				plainLock, plainBase, baseSer = id, maps.Clone(content), serial
			}
			seen[fmt.Sprint("plain lock granted=", want)]++
		case a < 86 && plainLock != "": // it writes what it read plus its change, and unlocks
			keys := []string{key()}
			want := "ok"
			for _, k := range keys {
				switch {
				case content[k] != plainBase[k]: // someone wrote it since the lock's read
					want = kilolock.ReasonWriteConflict
				case writeHolder(k) != nil && want == "ok":
					want = kilolock.ReasonReserved
				}
			}
			seen["plain write "+want]++
			if got := reason(postFromBase(plainLock, plainBase, baseSer, keys)); got != want {
				t.Fatalf("%s: plain write of %v = %s, the model says %s", where, keys, got, want)
			}
			_, err := e.Unlock(ctx, name, plainLock, false)
			must(err)
			plainLock = ""
		case a < 92: // a lock-less write
			keys := []string{key()}
			want := "ok"
			if plainLock != "" && mode == kilolock.LockExclusive {
				want = "locked"
			} else if writeHolder(keys[0]) != nil {
				want = kilolock.ReasonReserved
			}
			seen["lock-less write "+want]++
			if got := reason(post("", keys)); got != want {
				t.Fatalf("%s: lock-less write of %v = %s, the model says %s", where, keys, got, want)
			}
		default: // time passes
			clock = clock.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
		}

		// What the store holds agrees with the model, and no two holders
		// conflict.
		inFlight, err := applyrun.Runs(ctx, e, kilolock.RunFilter{State: name, InFlight: true, Limit: 100})
		must(err)
		byID := map[string]kilolock.ApplyRun{}
		for _, r := range inFlight {
			byID[r.ID] = r
		}
		for _, r := range runs {
			s := r.statusAt(clock)
			got, ok := byID[r.id]
			if s.Ended() != !ok || (ok && got.Status != s) {
				t.Fatalf("%s: run %s is %v in the store (listed %v), %s in the model", where, r.id, got.Status, ok, s)
			}
		}
		// Runs that ended leave the model, now and then, once the store
		// agreed (until then, renewing them must say they are over).
		if rng.IntN(4) == 0 {
			runs = slices.DeleteFunc(runs, func(r *modelRun) bool { return r.statusAt(clock).Ended() })
		}
		act := active()
		for i, a := range act {
			for _, b := range act[i+1:] {
				for _, x := range a.res {
					for _, y := range b.res {
						if x.Conflicts(y) {
							t.Fatalf("%s: runs %s and %s both hold %s and %s", where, a.id, b.id, x, y)
						}
					}
				}
			}
		}
	}
	t.Logf("outcomes: %v", seen)
	g, _, err := e.Graph(ctx, name)
	must(err)
	if got := stateOf(g); !maps.Equal(got, content) {
		t.Fatalf("final state %v, the model %v: a write was lost or invented", got, content)
	}
}

func sorted(m map[string]bool) string {
	ks := slices.Collect(maps.Keys(m))
	sort.Strings(ks)
	return "[" + strings.Join(ks, " ") + "]"
}

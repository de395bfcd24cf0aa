package storekit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// RunBlockers decides whether run may take its reservations on st now:
// it returns what blocks them. A plain write lock on an exclusive state
// counts as a write reservation on everything; on an optimistic state
// plain locks block no reservation (their writes are checked at commit).
// others are the active runs of the state (the run itself may be among
// them; it never blocks itself).
func RunBlockers(st *kilolock.State, run *kilolock.ApplyRun, others []kilolock.ApplyRun, now time.Time) []reserve.Blocker {
	var holds []reserve.Hold
	if st.LockMode != kilolock.LockOptimistic {
		for i := range st.Locks {
			if l := &st.Locks[i]; l.PlainWriter() {
				holds = append(holds, reserve.Hold{
					Reservation: kilolock.Reservation{Pattern: reserve.MustParse("*"), Mode: reserve.Write},
					LockID:      l.Info.ID, Holder: l.Info.Who, Operation: l.Info.Operation,
				})
			}
		}
	}
	for i := range others {
		o := &others[i]
		if o.ID != run.ID && o.StatusAt(now) == kilolock.RunActive {
			holds = append(holds, o.Holds()...)
		}
	}
	if len(holds) == 0 {
		return nil
	}
	return reserve.NewIndex(holds).Blockers(run.Reservations, run.ID)
}

// CheckRunLock decides, beside CheckLock, whether a lock may be taken on
// st with the state's active apply runs in view: a plain write lock on an
// exclusive state is refused while any run holds reservations (a
// *LockedError naming the run, so -lock-timeout waits for it); an apply
// run's own lock (opts.Run) needs the run to be this state's and active.
// A plan's shared read lock is never refused here.
func CheckRunLock(st *kilolock.State, info kilolock.LockInfo, opts kilolock.LockOptions, shared bool, runs []kilolock.ApplyRun, now time.Time) error {
	if opts.Run != "" {
		for i := range runs {
			r := &runs[i]
			if r.ID != opts.Run {
				continue
			}
			if s := r.StatusAt(now); s != kilolock.RunActive {
				if s == kilolock.RunWaiting {
					return &kilolock.InvalidError{Code: "run_not_reserved", Message: fmt.Sprintf("apply run %s has not taken its reservations yet", r.ID), Hint: "acquire the run's reservations before its apply locks the state"}
				}
				rc := *r
				rc.Status = s
				return &kilolock.RunEndedError{Run: &rc}
			}
			return nil
		}
		return fmt.Errorf("apply run %s on state %q: %w", opts.Run, st.Name, kilolock.ErrNotFound)
	}
	if shared || st.LockMode == kilolock.LockOptimistic {
		return nil
	}
	for i := range runs {
		r := &runs[i]
		if r.StatusAt(now) == kilolock.RunActive {
			return &kilolock.LockedError{State: st.Name, Holder: runHolder(r)}
		}
	}
	return nil
}

// CoveringSpellings returns the spellings of every reservation pattern
// that covers one of keys (see reserve.CoveringSpellings), each once: what
// a store looks up to find the holds a commit touches. A key that is not
// an address a pattern can name is returned in bad.
func CoveringSpellings(keys []string) (spellings, bad []string) {
	seen := map[string]bool{}
	for _, k := range keys {
		p, err := reserve.ParseKey(k)
		if err != nil {
			bad = append(bad, k)
			continue
		}
		for _, s := range reserve.CoveringSpellings(p) {
			if !seen[s] {
				seen[s] = true
				spellings = append(spellings, s)
			}
		}
	}
	return spellings, bad
}

// CheckRunCommit decides, beside CheckCommit, whether c may be appended to
// st with the apply runs' reservations in view. keys are CommitKeys(c);
// covering are the holds of active runs whose pattern covers one of the
// keys (found with CoveringSpellings); runs are the state's runs the
// commit's lock may belong to; lock is the lock the commit is written
// under (nil for none).
//
//   - Under an apply run's lock, the run must be active, and every key
//     must be covered by one of the run's write reservations
//     (ReasonOutOfScope otherwise, naming the addresses).
//   - Any other write must touch no other run's write reservation
//     (ReasonReserved, naming the apply, its holder and the addresses).
//
// It returns nil or a *ConflictError (or *RunEndedError).
func CheckRunCommit(st *kilolock.State, keys []string, lock *kilolock.Lock, runs []kilolock.ApplyRun, covering []reserve.Hold, now time.Time) error {
	if lock != nil && lock.Run != "" {
		var run *kilolock.ApplyRun
		for i := range runs {
			if runs[i].ID == lock.Run {
				run = &runs[i]
			}
		}
		if run == nil || run.StatusAt(now) != kilolock.RunActive {
			r := kilolock.ApplyRun{ID: lock.Run, State: st.Name, Status: kilolock.RunExpired}
			if run != nil {
				r = *run
				r.Status = run.StatusAt(now)
			}
			return &kilolock.ConflictError{
				State:        st.Name,
				Reason:       kilolock.ReasonRunEnded,
				Message:      fmt.Sprintf("apply run %s is %s: it may write nothing more; nothing was stored", r.ID, r.Status),
				Hint:         "the run was aborted or its lease ran out; its local result is in errored.tfstate: start a new orchestrated apply (kl apply --orchestrated) on the current state",
				LatestSerial: st.Serial,
			}
		}
		own := map[string]bool{}
		for _, h := range covering {
			if h.Run == run.ID && h.Mode == reserve.Write {
				own[h.Pattern.String()] = true
			}
		}
		var outside []string
		for _, k := range keys {
			p, err := reserve.ParseKey(k)
			ok := false
			if err == nil {
				for _, s := range reserve.CoveringSpellings(p) {
					if own[s] {
						ok = true
						break
					}
				}
			}
			if !ok {
				outside = append(outside, k)
			}
		}
		if len(outside) > 0 {
			return &kilolock.ConflictError{
				State:        st.Name,
				Reason:       kilolock.ReasonOutOfScope,
				Message:      fmt.Sprintf("apply run %s wrote %d address(es) outside its write reservations; nothing was stored", run.ID, len(outside)),
				Hint:         "plan again with a scope that owns these addresses (kl plan -f FILE / --target ADDR) and apply that plan",
				Addresses:    outside,
				LatestSerial: st.Serial,
			}
		}
		return nil
	}
	var hit []reserve.Hold
	for _, h := range covering {
		if h.Mode == reserve.Write {
			hit = append(hit, h)
		}
	}
	if len(hit) == 0 {
		return nil
	}
	x := reserve.NewIndex(hit)
	var addrs []string
	who := map[string]reserve.Hold{}
	for _, k := range keys {
		p, err := reserve.ParseKey(k)
		if err != nil {
			continue
		}
		found := false
		x.Meeting(p, func(h reserve.Hold) bool {
			if h.Pattern.Covers(p) {
				found = true
				who[h.Run] = h
			}
			return !found
		})
		if found {
			addrs = append(addrs, k)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	var names []string
	for _, h := range who {
		names = append(names, fmt.Sprintf("apply %s by %s (lease until %s)", h.Run, h.Holder, h.Expires.UTC().Format(time.RFC3339)))
	}
	slices.Sort(names)
	return &kilolock.ConflictError{
		State:        st.Name,
		Reason:       kilolock.ReasonReserved,
		Message:      fmt.Sprintf("these addresses are reserved for writing by %s; nothing was stored", strings.Join(names, ", ")),
		Hint:         fmt.Sprintf("wait for that apply to finish (`kl status %s` shows it), then plan and apply again; your local result is in errored.tfstate", st.Name),
		Addresses:    addrs,
		LatestSerial: st.Serial,
	}
}

// runHolder describes an apply run as the LockInfo a 423 names.
func runHolder(r *kilolock.ApplyRun) kilolock.LockInfo {
	return kilolock.LockInfo{
		ID:        r.ID,
		Operation: "kl apply --orchestrated",
		Who:       r.Actor,
		Info:      fmt.Sprintf("apply run %s holds %d reservation(s) until %s", r.ID, len(r.Reservations), r.Expires.UTC().Format(time.RFC3339)),
		Created:   r.Created,
	}
}

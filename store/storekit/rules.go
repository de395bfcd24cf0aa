package storekit

import (
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
)

// IsReadLock reports whether a lock with info, taken under opts on st, is
// a shared read lock: a plan's, where plans share.
func IsReadLock(st *kilolock.State, info kilolock.LockInfo, opts kilolock.LockOptions) bool {
	return opts.Run == "" && info.Operation == kilolock.OperationPlan && kilolock.SharedPlanLocks(st, opts.SharedPlans)
}

// CheckLock decides whether info may be taken as a new lock on st, whose
// current holders are st.Locks. It returns nil or a *LockedError.
//
// A lock id already held is refused. A plan's shared read lock (see
// IsReadLock) is granted beside anyone; so is an apply run's lock, whose
// reservations were checked when the run took them. Any other lock on an
// exclusive state is refused while a plain write lock is held; on an
// optimistic state it is granted. Past opts.MaxHolders holders (of any
// kind) every new lock is refused (see LockOptions).
func CheckLock(st *kilolock.State, info kilolock.LockInfo, opts kilolock.LockOptions) error {
	for _, l := range st.Locks {
		if l.Info.ID == info.ID {
			return &kilolock.LockedError{State: st.Name, Holder: l.Info}
		}
	}
	if opts.ReadOnly && !IsReadLock(st, info, opts) {
		what := "a write lock"
		if info.Operation == kilolock.OperationPlan {
			what = "a plan's lock, which on this state is a write lock (plans do not share here)"
		}
		return &kilolock.ReadOnlyLockError{State: st.Name, Message: fmt.Sprintf("a caller that may only read asked for %s on state %q", what, st.Name)}
	}
	shares := IsReadLock(st, info, opts) || opts.Run != "" || st.LockMode == kilolock.LockOptimistic
	if w := st.Writer(); w != nil && !shares {
		return &kilolock.LockedError{State: st.Name, Holder: w.Info}
	}
	limit := opts.MaxHolders
	if limit == 0 {
		limit = kilolock.DefaultMaxLockHolders
	}
	if limit > 0 && len(st.Locks) >= limit {
		return &kilolock.LockedError{State: st.Name, Holder: st.FirstHolder().Info, MaxHolders: limit}
	}
	return nil
}

// SelectUnlock decides what an unlock of id on st releases. A read-only
// caller releases only a plan's read lock it names. With Force,
// an empty id releases every write lock (plain or an apply run's) and
// leaves plans' read locks, which end by themselves; a given id releases
// that lock. A lock id that is not held, or an empty id without force, is
// a *LockMismatchError naming the writer (else the first holder; zero
// when none).
func SelectUnlock(st *kilolock.State, id string, opts kilolock.UnlockOptions) ([]kilolock.Lock, error) {
	if opts.ReadOnly {
		for _, l := range st.Locks {
			if l.Info.ID == id && id != "" && l.Shared {
				return []kilolock.Lock{l}, nil
			}
		}
		return nil, &kilolock.ReadOnlyLockError{State: st.Name, Message: fmt.Sprintf("a caller that may only read may release only a plan's read lock on state %q", st.Name)}
	}
	if opts.Force && id == "" {
		var out []kilolock.Lock
		for _, l := range st.Locks {
			if !l.Shared {
				out = append(out, l)
			}
		}
		return out, nil
	}
	for _, l := range st.Locks {
		if l.Info.ID == id {
			return []kilolock.Lock{l}, nil
		}
	}
	e := &kilolock.LockMismatchError{State: st.Name, Given: id}
	if h := st.FirstHolder(); h != nil {
		e.Holder = h.Info
	}
	return nil, e
}

// CheckDelete decides whether st may be deleted: unless forced, a state
// with locks is deleted only by one of its write-lock holders. It returns nil or a
// *LockedError naming the first holder.
func CheckDelete(st *kilolock.State, opts kilolock.DeleteOptions) error {
	if opts.Force || len(st.Locks) == 0 {
		return nil
	}
	for _, l := range st.Locks {
		if opts.LockID != "" && l.Info.ID == opts.LockID && !l.Shared {
			return nil
		}
	}
	return &kilolock.LockedError{State: st.Name, Holder: st.FirstHolder().Info}
}

// CheckLockMode decides whether st's lock mode (or how plans lock) may
// change: never while anyone holds a write lock (a *ConflictError with
// ReasonLocksHeld naming the holders), since the holders took their locks
// under the old rules. Plans' read locks do not count: they exclude
// nobody in any mode.
func CheckLockMode(st *kilolock.State) error {
	var holders []kilolock.LockInfo
	var names []string
	for _, l := range st.Locks {
		if l.Shared {
			continue
		}
		holders = append(holders, l.Info)
		names = append(names, fmt.Sprintf("%s (lock id %s, operation %s)", l.Info.Who, l.Info.ID, l.Info.Operation))
	}
	if len(holders) == 0 {
		return nil
	}
	return &kilolock.ConflictError{
		State:        st.Name,
		Reason:       kilolock.ReasonLocksHeld,
		Message:      fmt.Sprintf("the lock mode of state %q cannot change while it is locked; held by %s", st.Name, strings.Join(names, ", ")),
		Hint:         "wait for the holders to finish or force-unlock them, then change the mode",
		LatestSerial: st.Serial,
		Holders:      holders,
	}
}

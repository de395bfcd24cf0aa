package kilolock

import (
	"fmt"
	"regexp"
	"strings"
)

// The rules every Store applies inside its transaction. They live here, once,
// so that SQLite, PostgreSQL and any other Store agree exactly.

var stateNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidStateName reports whether name may name a state: 1 to 128 letters,
// digits, dots, dashes and underscores, starting with a letter or digit (so
// no path traversal, no empty name).
func ValidStateName(name string) error {
	if !stateNameRE.MatchString(name) || name == "." || name == ".." {
		return &InvalidError{
			Code:    "invalid_state_name",
			Message: fmt.Sprintf("%q is not a valid state name", name),
			Hint:    "use 1 to 128 letters, digits, '.', '-' or '_', starting with a letter or digit",
		}
	}
	return nil
}

// CheckLock decides whether info may be taken as a new lock on st, whose
// current holders are st.Locks: not when its id is held, nor beside an
// exclusive holder, nor past opts.MaxHolders holders of an optimistic
// state (see LockOptions). It returns nil or a *LockedError.
func CheckLock(st *StateInfo, info LockInfo, opts LockOptions) error {
	for _, l := range st.Locks {
		if l.Info.ID == info.ID {
			return &LockedError{State: st.Name, Holder: l.Info}
		}
	}
	if len(st.Locks) == 0 {
		return nil
	}
	if st.LockMode != LockOptimistic {
		return &LockedError{State: st.Name, Holder: st.Locks[0].Info}
	}
	limit := opts.MaxHolders
	if limit == 0 {
		limit = DefaultMaxLockHolders
	}
	if limit > 0 && len(st.Locks) >= limit {
		return &LockedError{State: st.Name, Holder: st.Locks[0].Info, MaxHolders: limit}
	}
	return nil
}

// CheckDelete decides whether st may be deleted: unless forced, a state
// with locks is deleted only by one of its holders. It returns nil or a
// *LockedError naming the first holder.
func CheckDelete(st *StateInfo, opts DeleteOptions) error {
	if opts.Force || len(st.Locks) == 0 {
		return nil
	}
	for _, l := range st.Locks {
		if opts.LockID != "" && l.Info.ID == opts.LockID {
			return nil
		}
	}
	return &LockedError{State: st.Name, Holder: st.Locks[0].Info}
}

// CheckCommit decides whether c may be appended to st (whose Locks are its
// current holders). It returns ErrStale, *LockedError, *LockMismatchError,
// *ConflictError or nil.
//
// The rules, in order:
//   - the commit must be computed against the current version (else ErrStale);
//   - with a lock id, that lock must be held (else 409 mismatch); without
//     one, no exclusive lock may be held (else 423 locked);
//   - a write under a lock must carry a serial above the one the lock read,
//     and no write may carry a serial below the current one (stale serial);
//   - a non-empty state keeps its lineage unless the operator allowed a
//     change for it.
//
// Force skips the serial and lineage guards, not the lock rules.
func CheckCommit(st *StateInfo, c *Commit) error {
	if st.Current != c.Parent {
		return ErrStale
	}
	var held *Lock
	for i := range st.Locks {
		if st.Locks[i].Info.ID == c.LockID {
			held = &st.Locks[i]
		}
	}
	switch {
	case c.LockID != "" && held == nil:
		e := &LockMismatchError{State: st.Name, Given: c.LockID}
		if len(st.Locks) > 0 {
			e.Holder = st.Locks[0].Info
		}
		return e
	case c.LockID == "" && len(st.Locks) > 0 && st.LockMode != LockOptimistic:
		return &LockedError{State: st.Name, Holder: st.Locks[0].Info}
	}
	if c.Force || st.Current == 0 {
		return nil
	}
	v := &c.Version
	if held != nil && v.Serial <= held.BaseSerial {
		return &ConflictError{
			State:        st.Name,
			Reason:       ReasonStaleSerial,
			Message:      fmt.Sprintf("serial %d is not above serial %d, which lock %s read; the state is at serial %d", v.Serial, held.BaseSerial, held.Info.ID, st.Serial),
			Hint:         "someone wrote this state after your lock was taken (was it force-unlocked?); pull the state, re-plan and apply again",
			LatestSerial: st.Serial,
			BaseSerial:   held.BaseSerial,
		}
	}
	if v.Serial < st.Serial {
		return &ConflictError{
			State:        st.Name,
			Reason:       ReasonStaleSerial,
			Message:      fmt.Sprintf("serial %d is below the current serial %d", v.Serial, st.Serial),
			Hint:         "your copy of the state is older than the stored one; run `tofu state pull`, re-plan and apply again",
			LatestSerial: st.Serial,
		}
	}
	if st.Lineage != "" && v.Lineage != st.Lineage && !st.AllowLineageChange {
		return &ConflictError{
			State:        st.Name,
			Reason:       ReasonLineage,
			Message:      fmt.Sprintf("lineage %q does not match the stored lineage %q", v.Lineage, st.Lineage),
			Hint:         "two configurations may point at one state by mistake; check the backend address, or let an operator allow a lineage change for this state (`kl state config NAME --allow-lineage-change`) before a deliberate `state push -force`",
			LatestSerial: st.Serial,
			Lineage:      st.Lineage,
			GotLineage:   v.Lineage,
		}
	}
	return nil
}

// ValidLockMode returns nil for LockExclusive and LockOptimistic, and an
// *InvalidError for anything else.
func ValidLockMode(mode LockMode) error {
	switch mode {
	case LockExclusive, LockOptimistic:
		return nil
	}
	return &InvalidError{
		Code:    "invalid_lock_mode",
		Message: fmt.Sprintf("%q is not a lock mode", mode),
		Hint:    `use "exclusive" or "optimistic"`,
	}
}

// CheckLockMode decides whether st's lock mode may change: never while
// anyone holds a lock (a *ConflictError with ReasonLocksHeld naming the
// holders), since the holders took their locks under the old rules.
func CheckLockMode(st *StateInfo) error {
	if len(st.Locks) == 0 {
		return nil
	}
	holders := make([]LockInfo, len(st.Locks))
	names := make([]string, len(st.Locks))
	for i, l := range st.Locks {
		holders[i] = l.Info
		names[i] = fmt.Sprintf("%s (lock id %s, operation %s)", l.Info.Who, l.Info.ID, l.Info.Operation)
	}
	return &ConflictError{
		State:        st.Name,
		Reason:       ReasonLocksHeld,
		Message:      fmt.Sprintf("the lock mode of state %q cannot change while it is locked; held by %s", st.Name, strings.Join(names, ", ")),
		Hint:         "wait for the holders to finish or force-unlock them, then change the mode",
		LatestSerial: st.Serial,
		Holders:      holders,
	}
}

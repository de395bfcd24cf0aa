package kilolock

import (
	"context"
	"fmt"
	"time"
)

// The rules every Store applies inside its transaction. They live here, once,
// so that SQLite, PostgreSQL and any other Store agree exactly.

// ValidStateName reports whether name may name a state: 1 to 128 letters,
// digits, dots, dashes and underscores, starting with a letter or digit (so
// no path traversal, no empty name).
func ValidStateName(name string) error {
	if !validStateName(name) {
		return &InvalidError{
			Code:    "invalid_state_name",
			Message: fmt.Sprintf("%q is not a valid state name", name),
			Hint:    "use 1 to 128 letters, digits, '.', '-' or '_', starting with a letter or digit",
		}
	}
	return nil
}

// OperationPlan is the LockInfo Operation of a plan: `tofu plan` and
// `terraform plan` lock with it, and a plan never writes the state.
const OperationPlan = "OperationTypePlan"

// SharedPlanLocks reports whether a plan's lock on st is a shared read
// lock: the state's own setting, else serverDefault.
func SharedPlanLocks(st *State, serverDefault bool) bool {
	if st.SharedPlanLocks != nil {
		return *st.SharedPlanLocks
	}
	return serverDefault
}

// Writer returns the first lock of st that excludes other writers on an
// exclusive state: a plain write lock (not a plan's read lock, not an
// apply run's lock, which its reservations scope). nil when none.
func (st *State) Writer() *Lock {
	for i := range st.Locks {
		if st.Locks[i].PlainWriter() {
			return &st.Locks[i]
		}
	}
	return nil
}

// FirstHolder is the lock a refusal names: the writer, else the first
// holder (nil when none).
func (st *State) FirstHolder() *Lock {
	if w := st.Writer(); w != nil {
		return w
	}
	if len(st.Locks) > 0 {
		return &st.Locks[0]
	}
	return nil
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
//     change for it;
//   - a state that requires client-side encryption (the state's setting or
//     its environment's, see State.ClientEncryptionRequired) takes only
//     client-side encrypted versions (Format FormatOpaque).
//
// Force skips the serial and lineage guards, not the lock rules, nor the
// requirement of client-side encryption. The guards hold for client-side
// encrypted versions as for plaintext ones (their serial and lineage are in
// the envelope's clear part); a refusal of a write that would turn an
// encrypted state into a plaintext one, or the other way round, says how
// OpenTofu's fallback block migrates a state in place.
func CheckCommit(st *State, c *Commit) error {
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
		if h := st.FirstHolder(); h != nil {
			e.Holder = h.Info
		}
		return e
	case held != nil && held.Shared:
		return &ConflictError{
			State:        st.Name,
			Reason:       ReasonReadLock,
			Message:      fmt.Sprintf("lock %s is a plan's shared read lock, which cannot write the state; nothing was stored", held.Info.ID),
			Hint:         "a plan never writes state: run `tofu apply` (it takes a write lock) to change it; plans share their lock so that they never wait for an apply",
			LatestSerial: st.Serial,
		}
	case c.LockID == "" && st.LockMode != LockOptimistic && st.Writer() != nil:
		// A run's lock does not count: its run's reservations (see
		// storekit.CheckRunCommit) guard what it writes.
		return &LockedError{State: st.Name, Holder: st.Writer().Info}
	}
	if st.ClientEncryptionRequired() && c.Version.Format != FormatOpaque {
		return encryptionRequired(st)
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
			Hint:         "someone wrote this state after your lock was taken (was it force-unlocked?); pull the state, re-plan and apply again" + migrationHint(st, c),
			LatestSerial: st.Serial,
			BaseSerial:   held.BaseSerial,
		}
	}
	if v.Serial < st.Serial {
		return &ConflictError{
			State:        st.Name,
			Reason:       ReasonStaleSerial,
			Message:      fmt.Sprintf("serial %d is below the current serial %d", v.Serial, st.Serial),
			Hint:         "your copy of the state is older than the stored one; run `tofu state pull`, re-plan and apply again" + migrationHint(st, c),
			LatestSerial: st.Serial,
		}
	}
	if st.Lineage != "" && v.Lineage != st.Lineage && !st.AllowLineageChange {
		return &ConflictError{
			State:        st.Name,
			Reason:       ReasonLineage,
			Message:      fmt.Sprintf("lineage %q does not match the stored lineage %q", v.Lineage, st.Lineage),
			Hint:         "two configurations may point at one state by mistake; check the backend address, or let an operator allow a lineage change for this state (`kl state config NAME --allow-lineage-change`) before a deliberate `state push -force`" + migrationHint(st, c),
			LatestSerial: st.Serial,
			Lineage:      st.Lineage,
			GotLineage:   v.Lineage,
		}
	}
	return nil
}

// encryptionRequired is the refusal of a plaintext write to a state that
// requires client-side encryption.
func encryptionRequired(st *State) *ConflictError {
	who := fmt.Sprintf("state %q requires", st.Name)
	if !st.RequireClientEncryption {
		who = fmt.Sprintf("the environment of state %q requires", st.Name)
	}
	return &ConflictError{
		State:        st.Name,
		Reason:       ReasonClientEncryptionRequired,
		Message:      who + " OpenTofu client-side encryption, and this write is plaintext; nothing was stored",
		Hint:         "add an `encryption` block to the configuration's terraform block (a key_provider, a method such as aes_gcm, and `state { method = ... }`) and apply with OpenTofu; a plaintext state migrates in place with `fallback { method = method.unencrypted.NAME }` in the state block. Terraform cannot encrypt state",
		LatestSerial: st.Serial,
	}
}

// migrationHint is what a refusal of c adds when c would turn st's current
// version from plaintext into client-side encrypted or back: OpenTofu
// migrates a state in place, keeping its lineage and serial, with a
// fallback block; "" when c and the current version are alike.
func migrationHint(st *State, c *Commit) string {
	encrypting := c.Version.Format == FormatOpaque
	if encrypting == (st.ClientEncryption != nil) {
		return ""
	}
	if encrypting {
		return ". This write is client-side encrypted and the stored version is plaintext: to encrypt the state in place, add the `encryption` block to the configuration that wrote it, with `fallback { method = method.unencrypted.NAME }` in its state block, so that tofu reads the plaintext state and writes it back encrypted, same lineage, next serial"
	}
	return ". The stored version is client-side encrypted and this write is plaintext: to decrypt the state in place, make an `unencrypted` method the state's method and the old method its `fallback`, so that tofu reads the encrypted state and writes it back in plaintext, same lineage, next serial"
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

// validStateName is ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ as a loop: every
// request checks a name, and a regular expression cost microseconds.
func validStateName(name string) bool {
	if len(name) == 0 || len(name) > 128 || !alnum(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// EndPlanLocks ends the plans' locks held longer than limit on every state
// (see Store.EndPlanLocks), logging each one, and returns them. A plan
// never writes, so this loses no work: it frees the lock a plan's CLI
// left when it died mid-plan (killed, or its kl killed by SIGPIPE), which
// would otherwise show in kl status forever and pin its base version
// against retention. The CLI, if it still runs, finds its lock gone when
// it unlocks, and says so.
func (e *Engine) EndPlanLocks(ctx context.Context, limit time.Duration) ([]StateLock, error) {
	ended, err := e.store.EndPlanLocks(ctx, e.now().Add(-limit))
	if err != nil {
		return nil, err
	}
	for _, l := range ended {
		e.log.Warn("ended a plan's lock held past the limit", "state", l.State, "lock_id", l.Lock.Info.ID, "holder", l.Lock.Info.Who,
			"held_for", e.now().Sub(l.Lock.Acquired).Round(time.Second), "limit", limit)
	}
	return ended, nil
}

// EndPlanLocksEvery runs EndPlanLocks with limit until ctx ends, every
// quarter of limit (between 1 s and 1 min), so that a plan's lock ends
// at most that long after limit. Several kld replicas may each run it. A
// limit of 0 or less returns at once: plans' locks are kept until released.
func (e *Engine) EndPlanLocksEvery(ctx context.Context, limit time.Duration) {
	if limit <= 0 {
		return
	}
	t := time.NewTicker(min(max(limit/4, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := e.EndPlanLocks(ctx, limit); err != nil && ctx.Err() == nil {
			e.log.Error("ending plans' locks held past the limit failed; it runs again", "err", err, "limit", limit)
		}
	}
}

package kilolock

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Stores and the Engine return these, or typed errors that
// match them with errors.Is; driver errors never cross the Store boundary.
var (
	// ErrNotFound: the state, or the version asked for, does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLocked: the state is locked by someone else (see *LockedError).
	ErrLocked = errors.New("state is locked")
	// ErrLockMismatch: a lock id was given that is not the holder's (see
	// *LockMismatchError).
	ErrLockMismatch = errors.New("lock id does not match the holder")
	// ErrConflict: the write would lose or contradict another write: a
	// different lineage, a stale serial (see *ConflictError).
	ErrConflict = errors.New("conflict")
	// ErrStale: the state moved past the commit's parent version; the
	// Engine recomputes the commit and retries.
	ErrStale = errors.New("state changed since the commit was computed")
	// ErrInvalid: the input is malformed (see *InvalidError).
	ErrInvalid = errors.New("invalid input")
	// ErrEncrypted: the state is client-side encrypted, so graph features
	// cannot read it.
	ErrEncrypted = errors.New("state is client-side encrypted")
	// ErrReadOnly: a query tried to write.
	ErrReadOnly = errors.New("read-only query")
	// ErrUnavailable: the database cannot be reached.
	ErrUnavailable = errors.New("database unavailable")
	// ErrRefused: the server refuses the request, whoever asks, as it is
	// configured (see *RefusedError).
	ErrRefused = errors.New("refused")
	// ErrKey: the database holds values encrypted at rest that the
	// configured keys cannot open: no key is configured, or not the one
	// they need (see *KeyError).
	ErrKey = errors.New("encryption key missing or wrong")
	// ErrQuotaExceeded: the write would grow a state, or its environment,
	// past a hard limit (see *QuotaError).
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrUnauthorized: the request carries no credentials, or ones the
	// server does not accept (an HTTP 401; see the client package).
	ErrUnauthorized = errors.New("unauthorized")
)

// LockedError is returned when a lock or write meets another holder, or
// when an optimistic state already has MaxHolders holders (Holder is then
// the first of them).
type LockedError struct {
	State      string
	Holder     LockInfo
	MaxHolders int
}

func (e *LockedError) Error() string {
	if e.MaxHolders > 0 {
		return fmt.Sprintf("state %q already has %d holders, the most it admits at once (the first is %s, lock id %s)", e.State, e.MaxHolders, e.Holder.Who, e.Holder.ID)
	}
	return fmt.Sprintf("state %q is locked by %s (lock id %s, operation %s)", e.State, e.Holder.Who, e.Holder.ID, e.Holder.Operation)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// LockMismatchError is returned when a write or unlock names a lock id that
// is not held. Holder is the current holder, zero when the state is unlocked.
type LockMismatchError struct {
	State  string
	Given  string
	Holder LockInfo
}

func (e *LockMismatchError) Error() string {
	if e.Holder.ID == "" {
		return fmt.Sprintf("state %q is not locked by %q: no lock is held (it may have been force-unlocked)", e.State, e.Given)
	}
	return fmt.Sprintf("state %q is not locked by %q: it is held by %s (lock id %s)", e.State, e.Given, e.Holder.Who, e.Holder.ID)
}

// Is makes errors.Is(err, ErrLockMismatch) true.
func (e *LockMismatchError) Is(target error) bool { return target == ErrLockMismatch }

// Conflict reasons of a ConflictError.
const (
	ReasonLineage     = "lineage_mismatch"
	ReasonStaleSerial = "stale_serial"
	// ReasonWriteConflict: an optimistic writer changed addresses that
	// another writer changed since the first one's base.
	ReasonWriteConflict = "conflict"
	// ReasonLocksHeld: the lock mode cannot change while locks are held.
	ReasonLocksHeld = "locks_held"
	// ReasonReadLock: a write under a plan's shared read lock.
	ReasonReadLock = "read_lock"
	// ReasonClientEncryptionRequired: a plaintext write to a state that
	// requires OpenTofu client-side encryption.
	ReasonClientEncryptionRequired = "client_encryption_required"
)

// ConflictError is a refused write, with what the writer needs to decide
// what to do next.
type ConflictError struct {
	State        string
	Reason       string // ReasonLineage, ReasonStaleSerial, …
	Message      string
	Hint         string
	Addresses    []string
	LatestSerial uint64
	BaseSerial   uint64
	Lineage      string // the stored lineage
	GotLineage   string // the incoming lineage
	Winner       *Winner
	Holders      []LockInfo // for ReasonLocksHeld
}

func (e *ConflictError) Error() string {
	if len(e.Addresses) > 0 {
		return fmt.Sprintf("%s (addresses: %s)", e.Message, strings.Join(e.Addresses, ", "))
	}
	return e.Message
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// ReadOnlyLockError is a caller that may only read (a read-scope token)
// asking for a write lock, or to release one.
type ReadOnlyLockError struct {
	State   string
	Message string
}

func (e *ReadOnlyLockError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrReadOnly) true.
func (e *ReadOnlyLockError) Is(target error) bool { return target == ErrReadOnly }

// InvalidError is malformed input, with a hint on how to correct it.
type InvalidError struct {
	Code    string // machine-readable, e.g. "malformed_json"
	Message string
	Hint    string
}

func (e *InvalidError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// RefusedError is a request the server refuses, whoever asks, as it is
// configured (a 403), with what to do next. It matches ErrRefused, and Err
// too when set.
type RefusedError struct {
	Code    string // machine-readable, e.g. "query_role_unavailable"
	Message string
	Hint    string
	Err     error
}

func (e *RefusedError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Unwrap returns Err.
func (e *RefusedError) Unwrap() error { return e.Err }

// KeyError is a store that cannot open what it encrypted at rest with the
// keys it was given: found when it opens, not at the first read.
type KeyError struct {
	Code    string // "encryption_key_missing", "encryption_key_unknown" or "encryption_key_wrong"
	Message string
	Hint    string
	// Needed are the IDs of the keys the database needs that were not
	// given.
	Needed []string
}

func (e *KeyError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrKey) true.
func (e *KeyError) Is(target error) bool { return target == ErrKey }

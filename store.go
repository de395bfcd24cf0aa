package kilolock

import "context"

// Store keeps states, their versions and their locks. Every invariant —
// one exclusive holder, the lineage and serial guards, a commit applying only
// onto its parent — is checked inside the store's own database transaction,
// so several processes sharing one database stay correct. Implementations
// run the shared rules (CheckLock, CheckCommit) inside that transaction.
//
// State names are validated by the caller (ValidStateName).
type Store interface {
	// State returns the state and its current holders.
	// ErrNotFound when the state was never locked or written.
	State(ctx context.Context, name string) (*StateInfo, error)

	// States lists every state, by name.
	States(ctx context.Context) ([]StateInfo, error)

	// Lock takes a lock, creating the state (in mode) when it does not exist.
	// A held exclusive lock gives a *LockedError; taking a lock id that is
	// already held on the state gives a *LockedError too.
	Lock(ctx context.Context, name string, info LockInfo, mode LockMode) (*Lock, error)

	// Unlock releases the lock with the given id and returns it. With force,
	// an empty id releases every holder. A lock id that is not held gives a
	// *LockMismatchError; a state that does not exist gives ErrNotFound.
	Unlock(ctx context.Context, name, id string, force bool) ([]Lock, error)

	// SetLockMode changes the lock mode (and creates the state when missing).
	SetLockMode(ctx context.Context, name string, mode LockMode) error

	// SetAllowLineageChange lets the next writes to a state carry another
	// lineage, for a deliberate `state push -force` from another lineage.
	// ErrNotFound when the state does not exist.
	SetAllowLineageChange(ctx context.Context, name string, allow bool) error

	// Commit appends a version. ErrStale when the current version is no
	// longer c.Parent; *LockedError, *LockMismatchError or *ConflictError when
	// CheckCommit refuses it. Nothing is written when it returns an error.
	Commit(ctx context.Context, name string, c *Commit) (*Version, WriteStats, error)

	// Snapshot loads a version by number. ErrNotFound when the state or the
	// version does not exist.
	Snapshot(ctx context.Context, name string, number int64) (*Snapshot, error)

	// History lists versions newest first. ErrNotFound when the state does
	// not exist; an empty list when it has no versions.
	History(ctx context.Context, name string, opts HistoryOptions) ([]Version, error)

	// Delete removes a state with its history and locks. ErrNotFound when
	// it does not exist.
	Delete(ctx context.Context, name string) error

	// Query runs one SQL statement in a read-only transaction. Writes are
	// refused by the database and reported as ErrReadOnly.
	Query(ctx context.Context, sql string, args ...any) (*QueryResult, error)

	// Ping reports whether the database answers (ErrUnavailable if not).
	Ping(ctx context.Context) error

	// Close releases the store's resources.
	Close() error
}

package kilolock

import (
	"context"
	"time"

	"github.com/kilolock/kilolock/graph"
)

// Store keeps states, their versions and their locks. Every invariant —
// one exclusive holder, the lineage and serial guards, a commit applying only
// onto its parent — is checked inside the store's own database transaction,
// so several processes sharing one database stay correct. Implementations
// run the shared rules (storekit.CheckLock, CheckCommit) inside that transaction.
//
// State names are validated by the caller (ValidStateName).
type Store interface {
	// State returns the state and its current holders.
	// ErrNotFound when the state was never locked or written.
	State(ctx context.Context, name string) (*State, error)

	// CurrentVersion returns the id and number of the state's current
	// version (0, 0 before its first write) with one indexed read and no
	// locks: what a reader needs to trust a cached copy.
	// ErrNotFound when the state does not exist.
	CurrentVersion(ctx context.Context, name string) (id, number int64, err error)

	// States lists every state, by name.
	States(ctx context.Context) ([]State, error)

	// Lock takes a lock, creating the state (in opts.Mode) when it does not
	// exist. A held exclusive lock gives a *LockedError; so do a lock id
	// that is already held on the state and an optimistic state with
	// opts.MaxHolders holders (storekit.CheckLock decides, in the transaction).
	Lock(ctx context.Context, name string, info LockInfo, opts LockOptions) (*Lock, error)

	// Unlock releases what storekit.SelectUnlock selects, in the transaction, and
	// returns it: the lock with the given id, or with Force and an empty id
	// every write lock. A lock id that is not held gives a
	// *LockMismatchError; a read-only caller's release of a write lock a
	// *ReadOnlyLockError; a state that does not exist gives ErrNotFound.
	Unlock(ctx context.Context, name, id string, opts UnlockOptions) ([]Lock, error)

	// EndPlanLocks releases, on every state at once, the locks of plans
	// (Operation OperationPlan, taken by no apply run: shared read locks,
	// and plans' exclusive locks where plans do not share) acquired before
	// acquiredBefore, and returns them with their states' names. A plan
	// never writes, so ending its lock loses no work; it frees what a
	// plan's CLI that died left held. An empty list when none was.
	EndPlanLocks(ctx context.Context, acquiredBefore time.Time) ([]StateLock, error)

	// SetLockMode changes the lock mode (and creates the state in mode when
	// missing). While any lock is held it refuses with a *ConflictError
	// (Reason ReasonLocksHeld, Holders set, in the order the locks were
	// taken) and changes nothing, even when mode is the current mode. A
	// mode other than LockExclusive or LockOptimistic is ErrInvalid.
	SetLockMode(ctx context.Context, name string, mode LockMode) error

	// SetAllowLineageChange lets the next writes to a state carry another
	// lineage, for a deliberate `state push -force` from another lineage.
	// ErrNotFound when the state does not exist.
	SetAllowLineageChange(ctx context.Context, name string, allow bool) error

	// SetSharedPlanLocks sets whether plans take shared read locks on a
	// state (State.SharedPlanLocks); nil follows the server's default.
	// It creates a missing state (in LockExclusive mode) and never waits for
	// holders: locks taken keep what they are.
	SetSharedPlanLocks(ctx context.Context, name string, shared *bool) error

	// SetRequireClientEncryption sets whether the state takes only OpenTofu
	// client-side encrypted writes (State.RequireClientEncryption;
	// CheckCommit enforces it). It creates a missing state (in
	// LockExclusive mode), so that a state can require encryption before
	// its first write; the versions it holds stay as they are.
	SetRequireClientEncryption(ctx context.Context, name string, require bool) error

	// Commit appends a version. An upsert whose Hash is the current
	// object's is no change and writes nothing; the Engine sends no upsert
	// for an object that only its spelling changed (graph.Instance.Equal),
	// so that costs no row either. ErrStale when the current version is no
	// longer c.Parent, or c.Expect does not hold; *LockedError,
	// *LockMismatchError or *ConflictError when CheckCommit refuses it.
	// Nothing is written when it returns an error.
	Commit(ctx context.Context, name string, c *Commit) (*Version, WriteStats, error)

	// Snapshot loads a version by number. ErrNotFound when the state or the
	// version does not exist.
	Snapshot(ctx context.Context, name string, number int64) (*Snapshot, error)

	// History lists versions newest first. ErrNotFound when the state does
	// not exist; an empty list when it has no versions.
	History(ctx context.Context, name string, opts HistoryOptions) ([]Version, error)

	// VersionBySerial returns the newest version of a state that carries
	// serial, with one index lookup (a state's serials never decrease, but
	// a rollback to a client-side encrypted version goes back to its
	// serial: the server cannot change what the envelope encrypts).
	// ErrNotFound when the state does not exist or no version has serial.
	VersionBySerial(ctx context.Context, name string, serial uint64) (*Version, error)

	// InstanceHistory lists every interval of the instance objects at
	// address: an instance address (its current object and its deposed
	// objects) or a resource address without an index key (all its
	// instances). Intervals are ordered by ValidFrom, then instance ID in
	// byte order. Its cost is a range scan of the (state, instance ID)
	// index, proportional to the intervals listed. An empty list when no
	// version ever held the address; ErrNotFound when the state does not
	// exist.
	InstanceHistory(ctx context.Context, name, address string) ([]InstanceInterval, error)

	// ChangesSince lists what every version numbered above after changed:
	// one record per instance ID or output name a version added, changed
	// or removed (once per version and key), with that version's LockID
	// and Actor. Records are ordered by version, then instances before
	// outputs, then ID in byte order. Its cost is proportional to the
	// changes listed, not to the state or its history. An empty list when
	// no version is above after; ErrNotFound when the state does not exist.
	ChangesSince(ctx context.Context, name string, after int64) ([]ChangeRecord, error)

	// HashesAt returns, for the given instance IDs and output names, their
	// hashes (graph.Instance.Hash, graph.Output.Hash: addresses of the
	// stored bytes, not of meaning) in version number; a key absent from
	// that version is absent
	// from the maps, which are never nil. Its cost is proportional to the
	// keys asked for. ErrNotFound when the state or the version does not
	// exist (a state has no version 0: a writer whose base is 0 read
	// nothing).
	HashesAt(ctx context.Context, name string, number int64, instanceIDs, outputNames []string) (instances, outputs map[string]graph.Hash, err error)

	// RecordRejection keeps a refused commit so that users can see why a
	// client that shows only "HTTP error: 409" failed. The store sets r.ID,
	// r.State and r.Created (UTC, microseconds). Rejections go with their
	// state when it is deleted. ErrNotFound when the state does not exist;
	// ErrInvalid for a nil r.
	RecordRejection(ctx context.Context, name string, r *Rejection) error

	// Rejections lists refused commits, newest first (at most limit; 0 or
	// less means 50). Winner is nil when none was recorded. ErrNotFound
	// when the state does not exist; an empty list when none was refused.
	Rejections(ctx context.Context, name string, limit int) ([]Rejection, error)

	// Delete removes a state with its history and locks, returning the
	// number of versions it had. It runs storekit.CheckDelete on the state's locks
	// in the same transaction, so a lock taken meanwhile is never deleted
	// with the state. ErrNotFound when it does not exist.
	Delete(ctx context.Context, name string, opts DeleteOptions) (versions int64, err error)

	// Query runs one SQL statement in a read-only transaction, as a
	// database user (or on a connection) that may read QueryRelations and
	// nothing else, within limits (see QueryLimits). Writes are refused by
	// the database and reported as ErrReadOnly; reading anything else is a
	// *RefusedError (code query_denied) that matches ErrReadOnly too; a
	// statement the database rejects is an *InvalidError; a store that
	// cannot run users' SQL safely as configured answers a *RefusedError.
	Query(ctx context.Context, limits QueryLimits, sql string, args ...any) (*QueryResult, error)

	// Ping reports whether the database answers (ErrUnavailable if not).
	Ping(ctx context.Context) error

	// Close releases the store's resources.
	Close() error
}

// InstanceInterval is a run of versions during which one instance object
// stayed the same: it is in every version v with ValidFrom <= v and, unless
// ValidTo is 0 (still current), v < ValidTo.
type InstanceInterval struct {
	Instance  Instance // Resource, Key, Deposed, Status, Object and Hash set
	ValidFrom int64
	ValidTo   int64
}

// InstanceIDRange returns the bounds [lo, hi) of the instance IDs a Store
// scans for InstanceHistory(address): every ID of an instance at address,
// or of an instance of the resource at address, lies in it (an index key
// starts with '[', a deposed suffix with ' '). Some IDs of other resources
// do too (`a.b2` for `a.b`); MatchesAddress filters them.
func InstanceIDRange(address string) (lo, hi string) { return address, address + `\` }

// MatchesAddress reports whether the instance object in belongs to address:
// an instance address or a resource address.
func MatchesAddress(in *Instance, address string) bool {
	return in.Address() == address || in.Resource.Address() == address
}

// DeleteOptions says whether Store.Delete may remove a locked state.
type DeleteOptions struct {
	// LockID is the caller's lock: a state it holds may be deleted
	// (`tofu workspace delete` locks first).
	LockID string
	// Force deletes whatever locks are held.
	Force bool
}

// SnapshotStreamer is a Store that reads a version's instances one at a
// time: loading a large version then costs one instance's memory, not the
// state's. The Engine loads versions so when its store is one.
type SnapshotStreamer interface {
	// SnapshotEach is Snapshot with its Instances left empty: each gets
	// them instead, one at a time, in no particular order; the Instance
	// and its Object are valid only during the call. An error of each
	// stops it and is returned. ErrNotFound as for Snapshot.
	SnapshotEach(ctx context.Context, name string, number int64, each func(*Instance) error) (*Snapshot, error)
}

// IndexReader is a Store that reads what a write is diffed against
// without the version's objects: the hash of each of its instances, and
// then the objects of the few a write changes or removes. A write on a
// state the Engine has not cached (a kld that just started, another
// replica's commit, an eviction) so costs what it changes, not a load of
// the whole version; the Engine writes so when its store is one.
type IndexReader interface {
	// SnapshotHashes is Snapshot with its Instances and Raw left empty,
	// and the content hash (graph.Instance.Hash) of each instance of the
	// version by ID (graph.Instance.ID) instead; and, by spelling, what
	// the store kept of those it was given with one
	// (graph.Instance.Spelling), which a parse of the next document takes
	// (graph.ParseOptions.Spelled). ErrNotFound as for Snapshot.
	SnapshotHashes(ctx context.Context, name string, number int64) (*Snapshot, map[string]graph.Hash, map[graph.Hash]graph.Spelled, error)
	// SnapshotSome returns the instances of version number whose IDs are
	// among ids, objects and all, in ID order; an ID the version does not
	// hold is left out. ErrNotFound when the state or the version does not
	// exist.
	SnapshotSome(ctx context.Context, name string, number int64, ids []string) ([]Instance, error)
	// SnapshotOutputs is Snapshot with its Instances and Raw left empty:
	// the version and its outputs, read without a row of its instances
	// (what history's views read of each version a change sits between,
	// for its secrets). ErrNotFound as for Snapshot.
	SnapshotOutputs(ctx context.Context, name string, number int64) (*Snapshot, error)
}

// TagResolver is a Store that keeps tags: the Engine resolves a tag's
// name in a VersionRef through it (the whole of tags is history.TagStore).
type TagResolver interface {
	// TagVersion returns the version number tag name names. ErrNotFound
	// when the state or the tag does not exist.
	TagVersion(ctx context.Context, state, name string) (int64, error)
}

// PruneLister is a Store that prunes versions (retention.RetentionStore): the
// Engine says through it who pruned a version that is asked for.
type PruneLister interface {
	// PrunedVersions lists the runs of pruned versions of a state numbered
	// below before (0: all), newest first, at most limit runs (0: 50).
	// ErrNotFound when the state does not exist.
	PrunedVersions(ctx context.Context, name string, before int64, limit int) ([]PrunedRange, error)
}

// DriftCounter is a Store that keeps drift checks (drift.DriftStore): Status
// counts a state's drifted instances through it.
type DriftCounter interface {
	// DriftCounts returns, for each of the states named (every state when
	// names is nil) that was ever checked, its open drift records; a state
	// never checked is not in the map.
	DriftCounts(ctx context.Context, names []string) (map[string]int, error)
}

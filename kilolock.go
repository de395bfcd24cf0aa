package kilolock

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/quota"
)

// Graph is a parsed tfstate v4 document: instances by canonical address,
// their dependency edges and outputs.
type Graph = graph.State

// Instance is one resource instance object of a Graph.
type Instance = graph.Instance

// Output is one root module output of a Graph.
type Output = graph.Output

// LockMode is how a state admits writers.
type LockMode string

const (
	// LockExclusive is classic Terraform locking: one holder at a time.
	LockExclusive LockMode = "exclusive"
	// LockOptimistic admits many holders; writes are merged at commit.
	LockOptimistic LockMode = "optimistic"
)

// Source says what produced a version.
type Source string

// Sources of versions.
const (
	SourceApply Source = "apply" // a POST under a lock
	SourcePush  Source = "push"  // a POST without a lock (-lock=false), or under tofu state push's
	// SourceMigrate is a POST of tofu init -migrate-state, under its lock.
	SourceMigrate Source = "migrate"
	// SourceMerge is what versions merged onto newer ones recorded before
	// Version.Merged: a merged write now keeps its writer's source.
	SourceMerge    Source = "merge"
	SourceRollback Source = "rollback" // a rollback to an earlier version
	SourceStateOp  Source = "state-op" // a server-side state rm/mv
	SourceImport   Source = "import"   // kl import
	// SourceMove is the source of the two versions a move between states
	// makes: the source's, without what moved, and the target's, with it.
	SourceMove Source = "move"
)

// DefaultMaxLockHolders is how many holders a state admits at once when
// LockOptions.MaxHolders is 0.
const DefaultMaxLockHolders = 100

// LockOptions say how Store.Lock takes a lock.
type LockOptions struct {
	// Mode is the lock mode of a state the lock creates (LockExclusive
	// when empty); an existing state keeps its own.
	Mode LockMode
	// MaxHolders caps the holders of a state (optimistic holders, plans'
	// read locks, apply runs' locks): a lock past it is refused with a
	// *LockedError whose MaxHolders is set. 0 means DefaultMaxLockHolders;
	// a negative value, no cap.
	MaxHolders int
	// Run is the apply run the lock is taken for ("" for a plain lock).
	Run string
	// SharedPlans is the server's default for states that set no
	// SharedPlanLocks of their own: whether plans take shared read locks.
	SharedPlans bool
	// ReadOnly says the caller may only read (a read-scope token): it may
	// take a plan's shared read lock and nothing else.
	ReadOnly bool
	// NoCreate keeps the lock from creating a state that does not exist:
	// the caller may only read, or its workspace takes no writes. On such
	// a state a lock storekit.CheckLock allows (a plan's) is granted without being
	// kept (Lock.Transient): there is nothing yet for it to protect, and
	// its UNLOCK finds nothing to release. An apply run's lock is
	// ErrNotFound.
	NoCreate bool
	// Seen, when not nil, is set to the state as a granted lock leaves it:
	// its row as the lock read it under the row lock, with the new lock
	// among its Locks. The Engine keeps it so that the holder's next write
	// need not read the state again (see Commit.Expect).
	Seen *State
}

// UnlockOptions say how Store.Unlock releases locks.
type UnlockOptions struct {
	// Force releases another holder's lock: with an empty id, every write
	// lock (see storekit.SelectUnlock).
	Force bool
	// ReadOnly says the caller may only read: it may release only a plan's
	// shared read lock.
	ReadOnly bool
}

// LockInfo is the lock document Terraform and OpenTofu send with LOCK and
// UNLOCK, with their field names.
type LockInfo struct {
	ID        string    `json:"ID"`
	Operation string    `json:"Operation"`
	Info      string    `json:"Info"`
	Who       string    `json:"Who"`
	Version   string    `json:"Version"`
	Created   time.Time `json:"Created"`
	Path      string    `json:"Path"`
}

// Lock is a held lock on a state.
type Lock struct {
	Info LockInfo `json:"info"`
	// BaseVersion and BaseSerial are the state's current version and serial
	// when the lock was taken: what its holder read.
	BaseVersion int64     `json:"base_version"`
	BaseSerial  uint64    `json:"base_serial"`
	Acquired    time.Time `json:"acquired"`
	// Shared marks a plan's read lock: granted beside a writer and other
	// readers, and never allowed to write.
	Shared bool `json:"shared,omitempty"`
	// Run is the apply run whose apply took the lock ("" for a plain
	// lock): it writes within the run's reservations.
	Run string `json:"run,omitempty"`
	// Transient marks a lock granted on a state that does not exist,
	// without creating it (see LockOptions.NoCreate): nothing holds it.
	Transient bool `json:"transient,omitempty"`
}

// StateLock is a lock with the name of its state, for lists across
// states.
type StateLock struct {
	State string `json:"state"`
	Lock  Lock   `json:"lock"`
}

// Version is the record of one immutable version of a state.
type Version struct {
	// ID is unique across the store and never reused, so it is safe as a
	// cache key even when a state is deleted and created again.
	ID               int64  `json:"id"`
	State            string `json:"state"`
	Number           int64  `json:"number"` // 1 for the first version of a state
	Serial           uint64 `json:"serial"`
	Lineage          string `json:"lineage"`
	TerraformVersion string `json:"terraform_version"`
	Source           Source `json:"source"`
	Actor            string `json:"actor"`
	LockID           string `json:"lock_id,omitempty"`
	BaseSerial       uint64 `json:"base_serial"`
	// Merged is set on a write that was merged onto versions other
	// writers committed after BaseSerial, the serial its writer read (an
	// optimistic state's, or an apply run's): an apply that shared the
	// state, not one that had it to itself. Its Source stays the
	// writer's (apply).
	Merged    bool      `json:"merged"`
	Created   time.Time `json:"created"`
	Added     int       `json:"added"`
	Changed   int       `json:"changed"`
	Removed   int       `json:"removed"`
	Instances int       `json:"instances"`
	// Managed counts the version's managed resources' current objects
	// (quota.Counts): what quotas count. It is kept with the version,
	// computed from each commit's changes.
	Managed int `json:"managed"`
	// Format is "indent" or "compact" for a parsed state, "opaque" for a
	// client-side encrypted one.
	Format string `json:"format"`
}

// FormatOpaque is the Version.Format of a client-side encrypted state.
const FormatOpaque = "opaque"

// MergedWrite reports whether v is a write merged onto others that says so
// beside its source: a version recorded as a merge (SourceMerge, before
// Merged) already says it by its source.
func (v *Version) MergedWrite() bool { return v.Merged && v.Source != SourceMerge }

// SourceText says what made v, for people; a merge recorded before merged
// writes kept their source names the serial its writer's lock read.
func (v *Version) SourceText() string {
	if v.Source == SourceMerge {
		return fmt.Sprintf("merge (base %d)", v.BaseSerial)
	}
	return string(v.Source)
}

// ChangesText counts what v changed ("+2 ~1 -0"); a merged write says onto
// what: the serial its writer read, others having written since. What a
// client-side encrypted version changed is unknown: "encrypted".
func (v *Version) ChangesText() string {
	if v.Format == FormatOpaque {
		return "encrypted"
	}
	s := fmt.Sprintf("+%d ~%d -%d", v.Added, v.Changed, v.Removed)
	if v.MergedWrite() {
		s += fmt.Sprintf(" merged, base serial %d", v.BaseSerial)
	}
	return s
}

// State describes a state and who holds it: its name, lock mode, current
// version and serial, lineage and the locks held on it. Its content, the
// resources and outputs of a version, is a Graph.
type State struct {
	Name               string    `json:"name"`
	Created            time.Time `json:"created"`
	Lineage            string    `json:"lineage"`
	Current            int64     `json:"current_version"` // 0 before the first write
	CurrentID          int64     `json:"current_version_id"`
	Serial             uint64    `json:"serial"`
	LockMode           LockMode  `json:"lock_mode"`
	AllowLineageChange bool      `json:"allow_lineage_change"`
	// SharedPlanLocks says whether plans take shared read locks on this
	// state; nil follows the server's default (see LockOptions.SharedPlans).
	SharedPlanLocks *bool `json:"shared_plan_locks,omitempty"`
	// RequireClientEncryption is the state's own setting: writes must be
	// OpenTofu client-side encrypted (see ClientEncryptionRequired).
	RequireClientEncryption bool `json:"require_client_encryption"`
	// EnvironmentRequiresClientEncryption is the setting of the state's
	// environment (Environment.RequireClientEncryption), which the
	// operator sets; false for a state of the local lane.
	EnvironmentRequiresClientEncryption bool `json:"environment_requires_client_encryption,omitempty"`
	// ClientEncryption is what the current version's envelope says in the
	// clear when it is client-side encrypted; nil when it is plaintext or
	// there is no version.
	ClientEncryption *ClientEncryption `json:"client_encryption,omitempty"`
	Locks            []Lock            `json:"locks"`
}

// ClientEncryptionRequired reports whether writes to st must be OpenTofu
// client-side encrypted: the state's setting or its environment's.
func (st State) ClientEncryptionRequired() bool {
	return st.RequireClientEncryption || st.EnvironmentRequiresClientEncryption
}

// EncryptionSummary says the state's client-side encryption in a few
// words: the key providers of its current version ("client-side" when
// unknown), and "required" when it requires encryption; "" for a plaintext
// state that does not.
func (st State) EncryptionSummary() string {
	var parts []string
	if enc := st.ClientEncryption; enc != nil {
		parts = append(parts, cmp.Or(enc.ProviderList(), "client-side"))
	}
	if st.ClientEncryptionRequired() {
		parts = append(parts, "required")
	}
	return strings.Join(parts, ", ")
}

// EncryptionText says the state's client-side encryption in full: how its
// current version is encrypted and what the state and its environment
// require; "" for a plaintext state that requires nothing.
func (st State) EncryptionText() string {
	var parts []string
	if enc := st.ClientEncryption; enc != nil {
		what := "client-side (OpenTofu"
		if enc.Version != "" {
			what += " " + enc.Version
		}
		what += ")"
		if p := enc.ProviderList(); p != "" {
			what += ", key providers " + p
		} else {
			what += ", key providers known after the next write"
		}
		parts = append(parts, what)
	} else if st.Current > 0 {
		parts = append(parts, "none: the current version is plaintext")
	}
	switch {
	case st.RequireClientEncryption:
		parts = append(parts, "required by the state; plaintext writes are refused")
	case st.EnvironmentRequiresClientEncryption:
		parts = append(parts, "required by its environment; plaintext writes are refused")
	case st.ClientEncryption == nil:
		return ""
	}
	return strings.Join(parts, "; ")
}

// ClientEncryption is what the server knows of an OpenTofu client-side
// encrypted version: what its envelope says in the clear besides serial and
// lineage (which the version records as any other). The key material and
// the meta's values (salts, wrapped keys) are never kept.
type ClientEncryption struct {
	// Version is the envelope's encryption_version ("v0"); "" for a
	// version stored before KiloLock read envelopes.
	Version string `json:"encryption_version"`
	// KeyProviders are the key providers the envelope's meta holds
	// metadata for, in its order; empty for a version stored before
	// KiloLock read envelopes.
	KeyProviders []KeyProvider `json:"key_providers"`
	// MoreKeyProviders counts the key providers left out past the first
	// graph.MaxMetaKeys.
	MoreKeyProviders int `json:"more_key_providers,omitempty"`
}

// ProviderList lists the key providers the envelope's meta names, as an
// encryption block names them ("pbkdf2.team, 2 more"); "" when none is
// known.
func (enc *ClientEncryption) ProviderList() string {
	names := make([]string, 0, len(enc.KeyProviders)+1)
	for _, k := range enc.KeyProviders {
		names = append(names, k.String())
	}
	if enc.MoreKeyProviders > 0 {
		names = append(names, fmt.Sprintf("%d more", enc.MoreKeyProviders))
	}
	return strings.Join(names, ", ")
}

// KeyProvider names a key provider of an OpenTofu encryption block, as its
// envelope's meta does: by type (pbkdf2, aws_kms, …) and name, or, for a
// provider given an encrypted_metadata_alias, by that alias alone.
type KeyProvider struct {
	Type  string `json:"type,omitempty"`
	Name  string `json:"name,omitempty"`
	Alias string `json:"alias,omitempty"`
}

// String is the provider as an encryption block names it (pbkdf2.team), or
// "alias NAME".
func (k KeyProvider) String() string {
	if k.Alias != "" {
		return "alias " + k.Alias
	}
	return k.Type + "." + k.Name
}

// Snapshot is everything stored for one version: enough to render it.
type Snapshot struct {
	Version      Version
	Instances    []Instance // Dependencies, Resource, Key, Deposed, Status, Object and Hash set
	Outputs      []Output
	CheckResults []byte
	// Raw, when not nil, is what the Engine kept to serve the document as
	// posted, because rendering the normalized parts does not reproduce it:
	// the gzip-compressed document, or a (gzip-compressed) delta against
	// that rendering; for an opaque (client-side encrypted) state, the
	// gzip-compressed blob. Stores keep it as opaque bytes.
	Raw []byte
}

// Commit is a new version expressed as its changes against Parent.
type Commit struct {
	// Parent is the version number the changes were computed against (0 for
	// a state with no version). A store answers ErrStale when the state's
	// current version is no longer Parent.
	Parent int64
	// LockID is the lock the writer claims to hold, "" for none.
	LockID string
	// Version carries the new version's metadata; ID, State, Number and
	// Created are set by the store.
	Version Version
	// Upserts are instances added or changed; Removed are the IDs (see
	// graph.Instance.ID) of instances removed.
	Upserts []Instance
	Removed []string
	// OutputUpserts and OutputsRemoved are the same for outputs.
	OutputUpserts  []Output
	OutputsRemoved []string
	CheckResults   []byte
	// Raw is stored with the version when not nil (see Snapshot.Raw).
	Raw []byte
	// ClientEncryption is the envelope's clear part of an opaque version
	// (Version.Format FormatOpaque), nil for a plaintext one: the store
	// keeps it as its state's State.ClientEncryption.
	ClientEncryption *ClientEncryption
	// Force skips the lineage and stale-serial guards, as `state push -force`
	// asks and an operator allowed.
	Force bool
	// DefaultQuota is the server's default limit of a state that sets none
	// and whose workspace sets none (see QuotaScope); nil for none. A
	// QuotaStore enforces it.
	DefaultQuota *quota.Limit
	// QuotaWarnings is set by a QuotaStore's Commit, never read: the
	// scopes the commit left above a soft limit (or above a hard one
	// without growing), which the store also keeps as quota events.
	QuotaWarnings []QuotaCount
	// Expect, when not nil, is the lock the writer took its state to have
	// without reading the state (the Engine's write under an exclusive
	// lock it took, see LockOptions.Seen): the store's transaction answers
	// ErrStale, writing nothing, unless Expect.Holds for the state it
	// reads under the row lock.
	Expect *Expectation

	// doc is the document lean upserts are read back from (see Object).
	doc io.ReaderAt
}

// Expectation is what a write assumed of its state when it used what its
// lock saw (LockOptions.Seen) instead of reading the state: an exclusive
// state whose write lock is Lock, a plain lock (no apply run's), the same
// one (acquired at the same time, by the same holder and operation). What
// a write decides from the state beyond that (its parent version, the
// guards) the store's transaction checks anyway.
type Expectation struct {
	Lock Lock
}

// Holds reports whether st is as x says.
func (x *Expectation) Holds(st *State) bool {
	if st.LockMode != LockExclusive {
		return false
	}
	want := &x.Lock
	for i := range st.Locks {
		l := &st.Locks[i]
		if l.Info.ID == want.Info.ID {
			return !l.Shared && l.Run == "" && l.Info.Who == want.Info.Who && l.Info.Operation == want.Info.Operation &&
				l.Acquired.Equal(want.Acquired)
		}
	}
	return false
}

// Object returns the object of c's upsert in: its Object, or for a lean
// instance (graph.State.Lean), which the Engine sends to a LeanUpserts
// store, its object read back from the document the write posted. Each
// call reads it anew: a store that writes a large first version holds one
// object at a time.
func (c *Commit) Object(in *Instance) ([]byte, error) {
	if in.Object != nil {
		return in.Object, nil
	}
	if c.doc == nil {
		return nil, invalidCommit("instance %s has no object", in.ID())
	}
	obj, err := in.ObjectFrom(c.doc)
	if err != nil {
		return nil, invalidCommit("%v", err)
	}
	return obj, nil
}

// LeanUpserts is a Store whose Commit reads its upserts' objects through
// Commit.Object. To such a store the Engine sends a write's upserts lean
// (their objects not in memory, read back one at a time as the store
// writes them); to any other, with their objects.
type LeanUpserts interface {
	// LeanUpserts only marks the store: it does nothing.
	LeanUpserts()
}

// HistoryOptions selects versions for Store.History.
type HistoryOptions struct {
	Limit  int   // at most this many, newest first; 0 means 50
	Before int64 // only versions with Number < Before; 0 means no bound
}

// QueryResult is the result of a read-only SQL query.
type QueryResult struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// WriteStats counts what a commit wrote to the database: rows inserted or
// updated, and the bytes of the values in them.
type WriteStats struct {
	Rows  int `json:"rows"`
	Bytes int `json:"bytes"`
}

// ChangeRecord says that a version added, changed or removed one instance
// or output.
type ChangeRecord struct {
	Version int64  `json:"version"`
	LockID  string `json:"lock_id"`
	Actor   string `json:"actor"`
	Output  bool   `json:"output"` // ID names an output rather than an instance
	ID      string `json:"id"`     // graph.Instance.ID, or the output's name
}

// Rejection is a refused commit, kept for `kl conflicts`.
type Rejection struct {
	ID      int64     `json:"id"`
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	LockID  string    `json:"lock_id"`
	Actor   string    `json:"actor"`
	// Reason is a ConflictError reason (ReasonWriteConflict, …).
	Reason string `json:"reason"`
	// Addresses in conflict: instance addresses and "output.NAME".
	Addresses    []string `json:"conflicting_addresses"`
	LatestSerial uint64   `json:"latest_serial"`
	BaseSerial   uint64   `json:"base_serial"`
	Winner       *Winner  `json:"winner,omitempty"`
	Hint         string   `json:"hint"`
}

// Explain says what the rejection's reason means, for people
// ("stale_serial: the write was older than the stored state"); the bare
// reason for one it does not know.
func (r *Rejection) Explain() string {
	switch r.Reason {
	case ReasonWriteConflict:
		if len(r.Addresses) == 0 {
			// Only an encrypted write, or one over an encrypted
			// version, conflicts without naming addresses.
			return "conflict: another writer committed first, and client-side encrypted writes cannot be merged"
		}
		return "conflict: another writer changed the same addresses first"
	case ReasonClientEncryptionRequired:
		return "client_encryption_required: a plaintext write to a state that requires client-side encryption"
	case ReasonStaleSerial:
		return "stale_serial: the write was older than the stored state"
	case ReasonLineage:
		return "lineage_mismatch: the write came from another lineage"
	}
	return r.Reason
}

// Winner is the commit that got to an address first.
type Winner struct {
	Actor   string `json:"actor"`
	LockID  string `json:"lock_id"`
	Version int64  `json:"version"`
}

func invalidCommit(format string, args ...any) error {
	return &InvalidError{
		Code:    "invalid_commit",
		Message: fmt.Sprintf(format, args...),
		Hint:    "build instances with graph.NewInstance and outputs with graph.NewOutput",
	}
}

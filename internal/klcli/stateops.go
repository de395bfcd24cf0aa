package klcli

import (
	"context"

	"github.com/kilolock/kilolock/client"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// StateOps is what kl needs to inspect a state's history and to change it
// on the server side: show, diff, rollback, state rm/mv, export and import.
// Every method answers ErrNotFound when the state does not exist and a
// *kilolock.VersionNotFoundError (over HTTP, an error matching ErrNotFound
// whose message lists the valid range) when a version does not. Writes are
// refused with an error matching ErrLocked, naming the holder, while the
// state is held.
type StateOps interface {
	// Show returns a version's summary and instances.
	Show(ctx context.Context, name string, ref kilolock.VersionRef) (*history.VersionView, error)
	// ShowInstance returns one instance of a version, sensitive values
	// masked. ErrNotFound when the version holds nothing at address.
	ShowInstance(ctx context.Context, name string, ref kilolock.VersionRef, address string) (*history.InstanceView, error)
	// Diff compares two versions.
	Diff(ctx context.Context, name string, from, to kilolock.VersionRef) (*history.StateDiff, error)
	// AddressHistory lists the versions that changed address, newest
	// first. ErrNotFound when no version ever held it.
	AddressHistory(ctx context.Context, name, address string) ([]history.AddressChange, error)
	// Rollback plans (r.Apply false) or applies a rollback of the whole
	// state, or of r.Address only. A plan has a nil Version.
	Rollback(ctx context.Context, name string, r RollbackRequest) (*history.RollbackResult, error)
	// StateList lists the current version's instances matching pattern
	// ("" for all).
	StateList(ctx context.Context, name, pattern string) ([]history.InstanceSummary, error)
	// StateRm removes instances, resources or modules by address.
	StateRm(ctx context.Context, name string, addresses []string, dryRun bool) (*history.StateOpResult, error)
	// StateMv moves an instance or resource to another address.
	StateMv(ctx context.Context, name, from, to string, dryRun bool) (*history.StateOpResult, error)
	// Export returns a version as a state file `tofu state push` accepts.
	Export(ctx context.Context, name string, ref kilolock.VersionRef) ([]byte, error)
	// Import writes a state file as a new version under the lineage guard
	// (force lets another lineage in). It creates a missing state.
	Import(ctx context.Context, name string, data []byte, force bool) (*ImportResult, error)
}

// RollbackRequest describes a rollback.
type RollbackRequest struct {
	To      kilolock.VersionRef
	Address string // "" rolls back the whole state
	Apply   bool   // false is a dry run
}

// ImportResult is the outcome of an import: the new version, or the
// current one when the file was byte-identical to it (Unchanged).
type ImportResult = client.ImportResponse

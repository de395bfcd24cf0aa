package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kilolock/kilolock"
)

// The store's half of a move between states: what a Store that can move
// instances between two states in one transaction implements (MoveStore),
// and the refusals it answers (MoveError).

// MoveCommit is what a MoveStore writes in one transaction: a new version
// of each of two states, or neither.
type MoveCommit struct {
	From, To string
	// FromCommit and ToCommit are the two versions' changes, each against
	// its Parent (ToCommit.Parent is 0 when Create).
	FromCommit, ToCommit *kilolock.Commit
	// Create makes To, which must not exist, in From's lock mode, with a
	// copy of From's own quota (a split).
	Create bool
	// ArchiveFrom archives From in the same transaction (a merge).
	ArchiveFrom bool
	// Moved are the instance IDs that leave From (before any rename): what
	// an apply run's reservation on From must not cover. Its length is the
	// count each history records.
	Moved []string
}

// MoveRecord is one move between states, as each side's history names it.
type MoveRecord struct {
	ID          int64     `json:"id"`
	From        string    `json:"from"`
	FromVersion int64     `json:"from_version"`
	To          string    `json:"to"`
	ToVersion   int64     `json:"to_version"`
	Instances   int       `json:"instances"`
	Actor       string    `json:"actor"`
	Created     time.Time `json:"created"`
}

// MoveStore is the optional capability of a Store to move instances
// between two states in one transaction.
type MoveStore interface {
	// Move writes m: both versions and the MoveRecord, or nothing. It
	// locks both state rows in the order of their ids, so that two
	// opposite moves never deadlock, and refuses with a *MoveError (and
	// nothing changed) while either state holds a write lock, an active
	// apply run reserves something that moves, or the target's quota would
	// be passed; when From is archived; when either is client-side
	// encrypted; when Create names a state that exists. kilolock.ErrStale when
	// either state moved on from its Parent; kilolock.ErrNotFound when From (or To,
	// unless Create) does not exist.
	Move(ctx context.Context, m *MoveCommit) (from, to *kilolock.Version, stats kilolock.WriteStats, err error)
	// Moves lists the moves state took part in, on either side, newest
	// first; none for a state that never moved anything.
	Moves(ctx context.Context, state string) ([]MoveRecord, error)
}

// Codes of a *MoveError.
const (
	MoveLocked            = "state_locked"
	MoveReserved          = "reserved"
	MoveDestinationExists = "destination_exists"
	MoveStateExists       = "state_exists"
	MoveQuotaExceeded     = "quota_exceeded"
	MoveSourceArchived    = "source_archived"
	MoveEncrypted         = "client_encrypted"
	MoveSameState         = "same_state"
)

// MoveError is a move refused with nothing changed: Code says why (one of
// the Move* codes), State which side. Forbidden marks a refusal the caller
// cannot wait out (a quota, an archived source: a 403); the others are
// conflicts (409). Err, when set, is the underlying refusal (*kilolock.LockedError,
// *kilolock.ConflictError, *kilolock.QuotaError), which errors.As finds.
type MoveError struct {
	Code      string
	State     string
	Message   string
	Hint      string
	Forbidden bool
	Err       error
}

func (e *MoveError) Error() string { return e.Message }

// Unwrap returns the underlying refusal.
func (e *MoveError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, kilolock.ErrConflict) true of a conflict and
// errors.Is(err, kilolock.ErrRefused) of a forbidden move.
func (e *MoveError) Is(target error) bool {
	if e.Forbidden {
		return target == kilolock.ErrRefused
	}
	return target == kilolock.ErrConflict
}

// MoveRefusal turns the refusal of one side's commit inside a move into a
// *MoveError, or returns err as it is when it is no refusal.
func MoveRefusal(state string, err error) error {
	var (
		locked   *kilolock.LockedError
		conflict *kilolock.ConflictError
		qe       *kilolock.QuotaError
		me       *MoveError
	)
	switch {
	case err == nil, errors.As(err, &me):
		return err
	case errors.As(err, &qe):
		return &MoveError{Code: MoveQuotaExceeded, State: state, Forbidden: true, Err: err,
			Message: fmt.Sprintf("moving into state %q would pass its quota: %v; nothing moved", state, err),
			Hint:    "move fewer instances, or raise the limit (kl quota set)"}
	case errors.As(err, &locked):
		return &MoveError{Code: MoveLocked, State: state, Err: err,
			Message: fmt.Sprintf("state %q is locked by %s (lock id %s, operation %s); nothing moved", state, locked.Holder.Who, locked.Holder.ID, locked.Holder.Operation),
			Hint:    "wait for the apply to finish (or force-unlock a dead one), then move again"}
	case errors.As(err, &conflict) && conflict.Reason == kilolock.ReasonReserved:
		return &MoveError{Code: MoveReserved, State: state, Err: err,
			Message: fmt.Sprintf("an apply run holds a write reservation on what moves in state %q: %s; nothing moved", state, conflict.Message),
			Hint:    "wait for the orchestrated apply to finish, or abort it (kl abort), then move again"}
	case errors.Is(err, kilolock.ErrEncrypted):
		return &MoveError{Code: MoveEncrypted, State: state, Err: err,
			Message: fmt.Sprintf("state %q is client-side encrypted: the server cannot see its resources to move them", state),
			Hint:    "move with tofu state mv -state-out on decrypted local copies, then push both"}
	}
	return err
}

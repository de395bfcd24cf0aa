package kilolock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kilolock/kilolock/graph"
)

// MoveCommit is what a MoveStore writes in one transaction: a new version
// of each of two states, or neither.
type MoveCommit struct {
	From, To string
	// FromCommit and ToCommit are the two versions' changes, each against
	// its Parent (ToCommit.Parent is 0 when Create).
	FromCommit, ToCommit *Commit
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
	// encrypted; when Create names a state that exists. ErrStale when
	// either state moved on from its Parent; ErrNotFound when From (or To,
	// unless Create) does not exist.
	Move(ctx context.Context, m *MoveCommit) (from, to *Version, stats WriteStats, err error)
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
// conflicts (409). Err, when set, is the underlying refusal (*LockedError,
// *ConflictError, *QuotaError), which errors.As finds.
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

// Is makes errors.Is(err, ErrConflict) true of a conflict and
// errors.Is(err, ErrRefused) of a forbidden move.
func (e *MoveError) Is(target error) bool {
	if e.Forbidden {
		return target == ErrRefused
	}
	return target == ErrConflict
}

// MoveRefusal turns the refusal of one side's commit inside a move into a
// *MoveError, or returns err as it is when it is no refusal.
func MoveRefusal(state string, err error) error {
	var (
		locked   *LockedError
		conflict *ConflictError
		qe       *QuotaError
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
	case errors.As(err, &conflict) && conflict.Reason == ReasonReserved:
		return &MoveError{Code: MoveReserved, State: state, Err: err,
			Message: fmt.Sprintf("an apply run holds a write reservation on what moves in state %q: %s; nothing moved", state, conflict.Message),
			Hint:    "wait for the orchestrated apply to finish, or abort it (kl abort), then move again"}
	case errors.Is(err, ErrEncrypted):
		return &MoveError{Code: MoveEncrypted, State: state, Err: err,
			Message: fmt.Sprintf("state %q is client-side encrypted: the server cannot see its resources to move them", state),
			Hint:    "move with tofu state mv -state-out on decrypted local copies, then push both"}
	}
	return err
}

// MoveEdit describes a move the server makes between two states, from
// their current versions.
type MoveEdit struct {
	// Operation names the move in the log ("state mv", "split", "merge").
	Operation string
	Actor     string
	From, To  string
	// Create makes To (a split); ArchiveFrom archives From (a merge).
	Create      bool
	ArchiveFrom bool
	// Apply computes both states' next content from their current ones
	// (to is empty, with a new lineage, when Create), which it must not
	// modify, and the IDs of the instance objects that leave from. Move
	// sets the serials, the layout and the order. It may be called more
	// than once, when another writer commits first.
	Apply func(from, to *Graph) (nextFrom, nextTo *Graph, moved []string, err error)
	// Plan, when set, sees both states' current and next content before
	// anything is committed; false commits nothing (a dry run).
	Plan func(from, nextFrom, to, nextTo *Graph) bool
}

// Move commits m: a new version of each state, written by the store in one
// transaction (see MoveStore), or nothing. It returns nil versions when
// m.Plan stopped it. Refusals are *MoveError; a store without MoveStore
// is a *RefusedError.
func (e *Engine) Move(ctx context.Context, m MoveEdit) (from, to *Version, stats WriteStats, err error) {
	ms, ok := e.store.(MoveStore)
	if !ok {
		return nil, nil, WriteStats{}, &RefusedError{Code: "moves_unsupported", Message: "this store cannot move instances between states in one transaction", Hint: "use the SQLite or PostgreSQL store"}
	}
	if m.From == m.To {
		return nil, nil, WriteStats{}, &MoveError{Code: MoveSameState, State: m.From, Message: fmt.Sprintf("state %q cannot move instances to itself between states", m.From), Hint: "to rename within one state use `kl state mv NAME FROM TO` without --to-state"}
	}
	for attempt := 0; ; attempt++ {
		from, to, stats, err = e.moveOnce(ctx, ms, m)
		if errors.Is(err, ErrStale) && attempt < maxStaleRetries {
			continue
		}
		return from, to, stats, err
	}
}

func (e *Engine) moveOnce(ctx context.Context, ms MoveStore, m MoveEdit) (from, to *Version, stats WriteStats, err error) {
	load := func(name string) (*State, *graph.State, error) {
		st, err := e.State(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		// A plain writer's lock refuses the move; an apply run's does
		// not by itself: its reservations, checked by the store, refuse
		// only a move of what they cover.
		for i := range st.Locks {
			if l := &st.Locks[i]; l.PlainWriter() {
				return nil, nil, MoveRefusal(name, &LockedError{State: name, Holder: l.Info})
			}
		}
		if st.Current == 0 {
			return nil, nil, fmt.Errorf("state %q has no version yet: %w", name, ErrNotFound)
		}
		_, cur, err := e.load(ctx, st)
		if err == nil && cur == nil {
			err = encryptedError(name)
		}
		if err != nil {
			return nil, nil, MoveRefusal(name, err)
		}
		return st, cur, nil
	}
	stFrom, curFrom, err := load(m.From)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	var (
		stTo  *State
		curTo *graph.State
	)
	if m.Create {
		switch _, err := e.State(ctx, m.To); {
		case err == nil:
			return nil, nil, WriteStats{}, &MoveError{Code: MoveStateExists, State: m.To, Message: fmt.Sprintf("state %q exists already; a split makes a new state", m.To), Hint: "pick a new name, or move into the existing state with `kl state mv --to-state`"}
		case !errors.Is(err, ErrNotFound):
			return nil, nil, WriteStats{}, err
		}
		stTo = &State{Name: m.To}
		curTo = &graph.State{Version: 4, Lineage: newLineage(), TerraformVersion: curFrom.TerraformVersion, Format: curFrom.Format}
	} else if stTo, curTo, err = load(m.To); err != nil {
		return nil, nil, WriteStats{}, err
	}
	nextFrom, nextTo, moved, err := m.Apply(curFrom, curTo)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	for _, p := range []struct {
		next, cur *graph.State
		st        *State
	}{{nextFrom, curFrom, stFrom}, {nextTo, curTo, stTo}} {
		p.next.Version = 4
		p.next.Serial = p.st.Serial + 1
		p.next.Format = p.cur.Format
		p.next.Outputs = append([]graph.Output(nil), p.next.Outputs...)
		p.next.Sort()
	}
	if m.Plan != nil && !m.Plan(curFrom, nextFrom, curTo, nextTo) {
		return nil, nil, WriteStats{}, nil
	}
	commitOf := func(st *State, cur, next *graph.State) (*Commit, *graph.State, error) {
		c := &Commit{Parent: st.Current, DefaultQuota: e.defaultQuota}
		prev := cur
		if m.Create && st == stTo {
			prev = nil
		}
		held, _ := diffInto(c, prev, next)
		c.Version.Source = SourceMove
		c.Version.Actor = m.Actor
		c.Version.Format = next.Format.String()
		if _, ok := e.store.(LeanUpserts); !ok {
			ups := slices.Clone(c.Upserts)
			for i := range ups {
				obj, err := c.Object(&ups[i])
				if err != nil {
					return nil, nil, err
				}
				ups[i].Object = obj
			}
			c.Upserts = ups
		}
		return c, held, nil
	}
	cFrom, heldFrom, err := commitOf(stFrom, curFrom, nextFrom)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	cTo, heldTo, err := commitOf(stTo, curTo, nextTo)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	vFrom, vTo, stats, err := ms.Move(ctx, &MoveCommit{From: m.From, To: m.To, FromCommit: cFrom, ToCommit: cTo, Create: m.Create, ArchiveFrom: m.ArchiveFrom, Moved: moved})
	if err != nil {
		var qe *QuotaError
		if errors.As(err, &qe) {
			e.refuseQuota(ctx, m.To, cTo, qe)
		}
		return nil, nil, WriteStats{}, err
	}
	for _, k := range []struct {
		v    *Version
		held *graph.State
	}{{vFrom, heldFrom}, {vTo, heldTo}} {
		if b, index, err := e.keepRendering(*k.v, k.held); err != nil {
			e.log.Error("keeping a moved version failed; it is read from the store next time", "state", k.v.State, "version", k.v.Number, "err", err)
			e.cache.drop(k.v.State)
		} else {
			e.cache.put(k.v.State, b, index)
		}
	}
	e.log.Info("move between states", "operation", m.Operation, "from", m.From, "from_version", vFrom.Number, "to", m.To, "to_version", vTo.Number,
		"instances", len(moved), "actor", m.Actor)
	return vFrom, vTo, stats, nil
}

// newLineage is a random (version 4) UUID, as Terraform makes lineages.
func newLineage() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

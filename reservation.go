package kilolock

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kilolock/kilolock/reserve"
)

// Reservation is a read or write claim on the addresses a pattern names,
// taken by an orchestrated apply before it changes any infrastructure.
type Reservation = reserve.Reservation

// RunStatus is where an apply run is in its life.
type RunStatus string

// Statuses of apply runs. A run starts waiting, becomes active when it
// takes its reservations (all at once), and ends succeeded, failed,
// aborted or expired; an ended run holds nothing and writes nothing.
const (
	RunWaiting   RunStatus = "waiting"
	RunActive    RunStatus = "active"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunAborted   RunStatus = "aborted"
	RunExpired   RunStatus = "expired"
)

// Ended reports whether a run in status s is over.
func (s RunStatus) Ended() bool { return s != RunWaiting && s != RunActive }

// Lease bounds on apply runs.
const (
	// DefaultLease is how long a run holds its reservations between two
	// renewals when the request names no lease.
	DefaultLease = 15 * time.Minute
	// MinLease and MaxLease bound the lease a run may ask for.
	MinLease = 2 * time.Second
	MaxLease = 24 * time.Hour
	// MaxRunReservations bounds the reservations of one run.
	MaxRunReservations = 100_000
)

// ApplyRun is one orchestrated apply on a state: who runs it, what it
// reserves, and until when its lease holds them.
type ApplyRun struct {
	ID    string `json:"id"` // "run_" and 16 hex digits
	State string `json:"state"`
	// Actor is who runs it (user@host), Info what (a command line).
	Actor string `json:"actor"`
	Info  string `json:"info,omitempty"`
	// Status is the run's status as of the read: a run whose lease ran out
	// reads as RunExpired whatever was stored.
	Status       RunStatus     `json:"status"`
	Reservations []Reservation `json:"reservations"`
	// SourceSerial is the serial of the state the run's plan read.
	SourceSerial uint64 `json:"source_serial"`
	// Lease is how long a renewal keeps the run alive.
	Lease   time.Duration `json:"lease"`
	Created time.Time     `json:"created"`
	// Acquired is when the run took its reservations (zero while waiting).
	Acquired time.Time `json:"acquired,omitzero"`
	Renewed  time.Time `json:"renewed"`
	Expires  time.Time `json:"expires"`
	Ended    time.Time `json:"ended,omitzero"`
	// EndedBy and Reason say who ended the run and why (an abort, a failed
	// apply, a commit).
	EndedBy string `json:"ended_by,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// MarshalJSON writes the run with its Lease as a Go duration ("15m0s"),
// the form a run's request gives it in, not as nanoseconds.
func (r ApplyRun) MarshalJSON() ([]byte, error) {
	type plain ApplyRun
	return json.Marshal(struct {
		plain
		Lease string `json:"lease"`
	}{plain(r), r.Lease.String()})
}

// UnmarshalJSON reads a run as MarshalJSON writes it; a Lease in
// nanoseconds, as runs were written before, is read too.
func (r *ApplyRun) UnmarshalJSON(b []byte) error {
	type plain ApplyRun
	aux := struct {
		*plain
		Lease json.RawMessage `json:"lease"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Lease = 0
	switch {
	case len(aux.Lease) == 0 || string(aux.Lease) == "null":
	case aux.Lease[0] == '"':
		var s string
		if err := json.Unmarshal(aux.Lease, &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("run lease %q: %w", s, err)
		}
		r.Lease = d
	default:
		var ns int64
		if err := json.Unmarshal(aux.Lease, &ns); err != nil {
			return err
		}
		r.Lease = time.Duration(ns)
	}
	return nil
}

// StatusAt returns the run's status at now: RunExpired for a waiting or
// active run whose lease ran out.
func (r *ApplyRun) StatusAt(now time.Time) RunStatus {
	if !r.Status.Ended() && !now.Before(r.Expires) {
		return RunExpired
	}
	return r.Status
}

// Holds returns the run's reservations as the holds others meet.
func (r *ApplyRun) Holds() []reserve.Hold {
	hs := make([]reserve.Hold, len(r.Reservations))
	for i, res := range r.Reservations {
		hs[i] = reserve.Hold{Reservation: res, Run: r.ID, Holder: r.Actor, Expires: r.Expires}
	}
	return hs
}

// RunRequest asks to start an apply run.
type RunRequest struct {
	Actor        string        `json:"actor"`
	Info         string        `json:"info,omitempty"`
	Reservations []Reservation `json:"reservations"`
	SourceSerial uint64        `json:"source_serial"`
	// Lease is the run's lease; 0 means DefaultLease.
	Lease time.Duration `json:"lease"`
}

// RunEnd says how a run ends.
type RunEnd struct {
	Status RunStatus // RunSucceeded, RunFailed or RunAborted
	By     string
	Reason string
}

// RunFilter selects apply runs for RunStore.Runs.
type RunFilter struct {
	// State limits the list to one state's runs ("" for every state).
	State string
	// InFlight keeps only runs waiting or active whose lease holds.
	InFlight bool
	// Limit is the most runs listed, newest first; 0 or less means 50.
	Limit int
}

// RunStore is the optional capability of a Store that keeps apply runs
// and their reservations. Every decision is taken inside the store's
// transaction under the state's row lock, with the rules of this package
// (storekit.RunBlockers, storekit.CheckRunLock, storekit.CheckRunCommit), so replicas agree. Times
// are the caller's clock (now): leases are compared with it.
//
// Every method returns ErrNotFound (wrapped) for a missing run or state.
type RunStore interface {
	// CreateRun stores run (ID, State, Actor, Info, Reservations in
	// canonical order, SourceSerial and Lease set by the caller) as
	// waiting, with Created and Renewed now and Expires now+Lease. It
	// creates a missing state in LockExclusive mode. ErrConflict when the
	// id is taken.
	CreateRun(ctx context.Context, run *ApplyRun, now time.Time) error
	// AcquireRun takes all of a waiting run's reservations at once, or
	// none: when storekit.RunBlockers finds blockers, the run stays waiting (its
	// lease renewed) and they are returned. An active run is returned as
	// it is. An ended or expired run is a *RunEndedError.
	AcquireRun(ctx context.Context, id string, now time.Time) (*ApplyRun, []reserve.Blocker, error)
	// RenewRun extends a waiting or active run's lease to now+Lease. An
	// ended or expired run is a *RunEndedError (an aborted run learns of
	// its abort this way).
	RenewRun(ctx context.Context, id string, now time.Time) (*ApplyRun, error)
	// EndRun ends a waiting or active run, releasing its reservations at
	// once. An ended or expired run is a *RunEndedError.
	EndRun(ctx context.Context, id string, end RunEnd, now time.Time) (*ApplyRun, error)
	// Run returns one run with its reservations.
	Run(ctx context.Context, id string, now time.Time) (*ApplyRun, error)
	// Runs lists runs newest first, with their reservations. ErrNotFound
	// when f.State names a state that does not exist.
	Runs(ctx context.Context, f RunFilter, now time.Time) ([]ApplyRun, error)
}

// RunEndedError is an operation on a run that is over.
type RunEndedError struct {
	Run *ApplyRun
}

func (e *RunEndedError) Error() string {
	r := e.Run
	msg := fmt.Sprintf("apply run %s on state %q is %s", r.ID, r.State, r.Status)
	if r.EndedBy != "" {
		msg += " by " + r.EndedBy
	}
	if r.Reason != "" {
		msg += " (" + r.Reason + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *RunEndedError) Is(target error) bool { return target == ErrConflict }

// ReservedError is a run that could not take its reservations: Blockers
// say who holds what it wants.
type ReservedError struct {
	State    string
	Run      string
	Blockers []reserve.Blocker
	Now      time.Time
}

func (e *ReservedError) Error() string {
	var parts []string
	for _, b := range e.Blockers {
		parts = append(parts, fmt.Sprintf("%s %s %s", b.Pattern, b.Mode, b.Describe(e.Now)))
	}
	return fmt.Sprintf("state %q: reservations of run %s are blocked by %s", e.State, e.Run, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *ReservedError) Is(target error) bool { return target == ErrLocked }

// Reasons of the ConflictErrors the reservation rules give.
const (
	// ReasonReserved: a write touched another apply run's write
	// reservation.
	ReasonReserved = "reserved"
	// ReasonOutOfScope: an apply run wrote outside its write reservations.
	ReasonOutOfScope = "outside_reservations"
	// ReasonRunEnded: a write under an apply run that was aborted, expired
	// or ended.
	ReasonRunEnded = "apply_run_ended"
)

// NewRunID returns a fresh apply run id.
func NewRunID() string { return NewID("run_") }

// ValidRunID reports whether id has the form NewRunID gives.
func ValidRunID(id string) error {
	h, ok := strings.CutPrefix(id, "run_")
	if ok && len(h) == 16 && strings.Trim(h, "0123456789abcdef") == "" {
		return nil
	}
	return &InvalidError{Code: "invalid_run_id", Message: fmt.Sprintf("%q is not an apply run id", id), Hint: "apply run ids look like run_7c3a91d2e4f5a6b7; `kl status STATE` lists the runs of a state"}
}

// PlainWriter reports whether l is a plain write lock: neither a plan's
// shared read lock nor an apply run's lock.
func (l *Lock) PlainWriter() bool { return l.Run == "" && !l.Shared }

// CommitKeys returns what a commit changes as reservations see it:
// instance IDs and "output.NAME", sorted.
func CommitKeys(c *Commit) []string {
	keys := make([]string, 0, len(c.Upserts)+len(c.Removed)+len(c.OutputUpserts)+len(c.OutputsRemoved))
	for i := range c.Upserts {
		keys = append(keys, c.Upserts[i].ID())
	}
	keys = append(keys, c.Removed...)
	for _, o := range c.OutputUpserts {
		keys = append(keys, "output."+o.Name)
	}
	for _, n := range c.OutputsRemoved {
		keys = append(keys, "output."+n)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// maxStatusRuns bounds the runs a status shows.
const maxStatusRuns = 100

// inFlightRuns returns a state's runs in flight for Status: an empty list
// on a store that keeps no runs.
func (e *Engine) inFlightRuns(ctx context.Context, name string) ([]ApplyRun, error) {
	rs, ok := e.store.(RunStore)
	if !ok {
		return []ApplyRun{}, nil
	}
	runs, err := rs.Runs(ctx, RunFilter{State: name, InFlight: true, Limit: maxStatusRuns}, e.now().UTC())
	if err != nil {
		return nil, err
	}
	if runs == nil {
		runs = []ApplyRun{}
	}
	return runs, nil
}

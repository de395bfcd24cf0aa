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
// (RunBlockers, CheckRunLock, CheckRunCommit), so replicas agree. Times
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
	// none: when RunBlockers finds blockers, the run stays waiting (its
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

// plainWriter reports whether l is a plain write lock: neither a plan's
// shared read lock nor an apply run's lock.
func plainWriter(l *Lock) bool { return l.Run == "" && !l.Shared }

// RunBlockers decides whether run may take its reservations on st now:
// it returns what blocks them. A plain write lock on an exclusive state
// counts as a write reservation on everything; on an optimistic state
// plain locks block no reservation (their writes are checked at commit).
// others are the active runs of the state (the run itself may be among
// them; it never blocks itself).
func RunBlockers(st *StateInfo, run *ApplyRun, others []ApplyRun, now time.Time) []reserve.Blocker {
	var holds []reserve.Hold
	if st.LockMode != LockOptimistic {
		for i := range st.Locks {
			if l := &st.Locks[i]; plainWriter(l) {
				holds = append(holds, reserve.Hold{
					Reservation: Reservation{Pattern: reserve.MustParse("*"), Mode: reserve.Write},
					LockID:      l.Info.ID, Holder: l.Info.Who, Operation: l.Info.Operation,
				})
			}
		}
	}
	for i := range others {
		o := &others[i]
		if o.ID != run.ID && o.StatusAt(now) == RunActive {
			holds = append(holds, o.Holds()...)
		}
	}
	if len(holds) == 0 {
		return nil
	}
	return reserve.NewIndex(holds).Blockers(run.Reservations, run.ID)
}

// CheckRunLock decides, beside CheckLock, whether a lock may be taken on
// st with the state's active apply runs in view: a plain write lock on an
// exclusive state is refused while any run holds reservations (a
// *LockedError naming the run, so -lock-timeout waits for it); an apply
// run's own lock (opts.Run) needs the run to be this state's and active.
// A plan's shared read lock is never refused here.
func CheckRunLock(st *StateInfo, info LockInfo, opts LockOptions, shared bool, runs []ApplyRun, now time.Time) error {
	if opts.Run != "" {
		for i := range runs {
			r := &runs[i]
			if r.ID != opts.Run {
				continue
			}
			if s := r.StatusAt(now); s != RunActive {
				if s == RunWaiting {
					return &InvalidError{Code: "run_not_reserved", Message: fmt.Sprintf("apply run %s has not taken its reservations yet", r.ID), Hint: "acquire the run's reservations before its apply locks the state"}
				}
				rc := *r
				rc.Status = s
				return &RunEndedError{Run: &rc}
			}
			return nil
		}
		return fmt.Errorf("apply run %s on state %q: %w", opts.Run, st.Name, ErrNotFound)
	}
	if shared || st.LockMode == LockOptimistic {
		return nil
	}
	for i := range runs {
		r := &runs[i]
		if r.StatusAt(now) == RunActive {
			return &LockedError{State: st.Name, Holder: runHolder(r)}
		}
	}
	return nil
}

// runHolder describes an apply run as the LockInfo a 423 names.
func runHolder(r *ApplyRun) LockInfo {
	return LockInfo{
		ID:        r.ID,
		Operation: "kl apply --orchestrated",
		Who:       r.Actor,
		Info:      fmt.Sprintf("apply run %s holds %d reservation(s) until %s", r.ID, len(r.Reservations), r.Expires.UTC().Format(time.RFC3339)),
		Created:   r.Created,
	}
}

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

// CoveringSpellings returns the spellings of every reservation pattern
// that covers one of keys (see reserve.CoveringSpellings), each once: what
// a store looks up to find the holds a commit touches. A key that is not
// an address a pattern can name is returned in bad.
func CoveringSpellings(keys []string) (spellings, bad []string) {
	seen := map[string]bool{}
	for _, k := range keys {
		p, err := reserve.ParseKey(k)
		if err != nil {
			bad = append(bad, k)
			continue
		}
		for _, s := range reserve.CoveringSpellings(p) {
			if !seen[s] {
				seen[s] = true
				spellings = append(spellings, s)
			}
		}
	}
	return spellings, bad
}

// CheckRunCommit decides, beside CheckCommit, whether c may be appended to
// st with the apply runs' reservations in view. keys are CommitKeys(c);
// covering are the holds of active runs whose pattern covers one of the
// keys (found with CoveringSpellings); runs are the state's runs the
// commit's lock may belong to; lock is the lock the commit is written
// under (nil for none).
//
//   - Under an apply run's lock, the run must be active, and every key
//     must be covered by one of the run's write reservations
//     (ReasonOutOfScope otherwise, naming the addresses).
//   - Any other write must touch no other run's write reservation
//     (ReasonReserved, naming the apply, its holder and the addresses).
//
// It returns nil or a *ConflictError (or *RunEndedError).
func CheckRunCommit(st *StateInfo, keys []string, lock *Lock, runs []ApplyRun, covering []reserve.Hold, now time.Time) error {
	if lock != nil && lock.Run != "" {
		var run *ApplyRun
		for i := range runs {
			if runs[i].ID == lock.Run {
				run = &runs[i]
			}
		}
		if run == nil || run.StatusAt(now) != RunActive {
			r := ApplyRun{ID: lock.Run, State: st.Name, Status: RunExpired}
			if run != nil {
				r = *run
				r.Status = run.StatusAt(now)
			}
			return &ConflictError{
				State:        st.Name,
				Reason:       ReasonRunEnded,
				Message:      fmt.Sprintf("apply run %s is %s: it may write nothing more; nothing was stored", r.ID, r.Status),
				Hint:         "the run was aborted or its lease ran out; its local result is in errored.tfstate: start a new orchestrated apply (kl apply --orchestrated) on the current state",
				LatestSerial: st.Serial,
			}
		}
		own := map[string]bool{}
		for _, h := range covering {
			if h.Run == run.ID && h.Mode == reserve.Write {
				own[h.Pattern.String()] = true
			}
		}
		var outside []string
		for _, k := range keys {
			p, err := reserve.ParseKey(k)
			ok := false
			if err == nil {
				for _, s := range reserve.CoveringSpellings(p) {
					if own[s] {
						ok = true
						break
					}
				}
			}
			if !ok {
				outside = append(outside, k)
			}
		}
		if len(outside) > 0 {
			return &ConflictError{
				State:        st.Name,
				Reason:       ReasonOutOfScope,
				Message:      fmt.Sprintf("apply run %s wrote %d address(es) outside its write reservations; nothing was stored", run.ID, len(outside)),
				Hint:         "plan again with a scope that owns these addresses (kl plan -f FILE / --target ADDR) and apply that plan",
				Addresses:    outside,
				LatestSerial: st.Serial,
			}
		}
		return nil
	}
	var hit []reserve.Hold
	for _, h := range covering {
		if h.Mode == reserve.Write {
			hit = append(hit, h)
		}
	}
	if len(hit) == 0 {
		return nil
	}
	x := reserve.NewIndex(hit)
	var addrs []string
	who := map[string]reserve.Hold{}
	for _, k := range keys {
		p, err := reserve.ParseKey(k)
		if err != nil {
			continue
		}
		found := false
		x.Meeting(p, func(h reserve.Hold) bool {
			if h.Pattern.Covers(p) {
				found = true
				who[h.Run] = h
			}
			return !found
		})
		if found {
			addrs = append(addrs, k)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	var names []string
	for _, h := range who {
		names = append(names, fmt.Sprintf("apply %s by %s (lease until %s)", h.Run, h.Holder, h.Expires.UTC().Format(time.RFC3339)))
	}
	slices.Sort(names)
	return &ConflictError{
		State:        st.Name,
		Reason:       ReasonReserved,
		Message:      fmt.Sprintf("these addresses are reserved for writing by %s; nothing was stored", strings.Join(names, ", ")),
		Hint:         fmt.Sprintf("wait for that apply to finish (`kl status %s` shows it), then plan and apply again; your local result is in errored.tfstate", st.Name),
		Addresses:    addrs,
		LatestSerial: st.Serial,
	}
}

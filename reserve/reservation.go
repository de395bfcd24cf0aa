package reserve

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Mode is what a reservation lets its holder do with the addresses it
// names: read them (others may read too) or write them (nobody else may
// read or write them meanwhile).
type Mode string

// Modes of reservations.
const (
	Read  Mode = "read"
	Write Mode = "write"
)

// Valid reports whether m is Read or Write.
func (m Mode) Valid() bool { return m == Read || m == Write }

// Reservation is a claim on the addresses a Pattern names.
type Reservation struct {
	Pattern Pattern `json:"pattern"`
	Mode    Mode    `json:"mode"`
}

// String returns "PATTERN (MODE)".
func (r Reservation) String() string { return r.Pattern.String() + " (" + string(r.Mode) + ")" }

// Conflicts reports whether r and o cannot be held by two holders at once:
// their patterns intersect and at least one of them writes.
func (r Reservation) Conflicts(o Reservation) bool {
	return (r.Mode == Write || o.Mode == Write) && r.Pattern.Intersects(o.Pattern)
}

// Normalize returns rs in canonical order — by pattern spelling, then
// writes before reads — with duplicates dropped and a read dropped where
// the same pattern is also written. Acquiring in this order, all at once,
// means two appliers never wait for each other in a cycle. It refuses a
// zero pattern or an unknown mode.
func Normalize(rs []Reservation) ([]Reservation, error) {
	mode := make(map[string]Reservation, len(rs))
	for _, r := range rs {
		if r.Pattern.IsZero() {
			return nil, fmt.Errorf("reservation without a pattern")
		}
		if !r.Mode.Valid() {
			return nil, fmt.Errorf("reservation %s: mode %q is neither read nor write", r.Pattern, r.Mode)
		}
		if cur, ok := mode[r.Pattern.String()]; !ok || cur.Mode == Read {
			mode[r.Pattern.String()] = r
		}
	}
	out := make([]Reservation, 0, len(mode))
	for _, r := range mode {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reservation) int { return strings.Compare(a.Pattern.String(), b.Pattern.String()) })
	return out, nil
}

// Hold is a reservation someone holds: an apply run's, or the implicit
// write reservation on everything of a plain exclusive write lock.
type Hold struct {
	Reservation
	// Run is the apply run holding it; "" for a plain lock.
	Run string `json:"run,omitempty"`
	// LockID is the plain lock's id, for a Hold of a plain lock.
	LockID string `json:"lock_id,omitempty"`
	// Holder says who: the run's actor or the lock's Who.
	Holder string `json:"holder"`
	// Operation is the plain lock's operation (OperationTypeApply, …).
	Operation string `json:"operation,omitempty"`
	// Expires is when the run's lease ends unless renewed; zero for a
	// plain lock, which lasts until it is unlocked.
	Expires time.Time `json:"expires,omitzero"`
}

// Blocker is a Hold standing in the way of a wanted reservation.
type Blocker struct {
	Hold
	// Wanted is the reservation the Hold blocks.
	Wanted Reservation `json:"wanted"`
}

// Describe says who holds b and for how much longer, as the wait feedback
// shows it: `held by alice@laptop (apply 7c3a91…, lease 14m23s)`.
func (b Blocker) Describe(now time.Time) string {
	if b.Run == "" {
		what := "a plain lock"
		if b.Operation != "" {
			what = "a plain " + strings.ToLower(strings.TrimPrefix(b.Operation, "OperationType"))
		}
		return fmt.Sprintf("held by %s (%s, lock id %s)", b.Holder, what, b.LockID)
	}
	lease := "expired"
	if left := b.Expires.Sub(now); left > 0 {
		lease = left.Round(time.Second).String()
	}
	return fmt.Sprintf("held by %s (apply %s, lease %s)", b.Holder, ShortRun(b.Run), lease)
}

// ShortRun abbreviates a run id for people: its first 6 characters after
// any "run_" prefix, then "…".
func ShortRun(id string) string {
	s := strings.TrimPrefix(id, "run_")
	if len(s) <= 8 {
		return s
	}
	return s[:6] + "…"
}

package webui

import (
	"errors"
	"net/http"
	"time"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/kilolock/kilolock"
)

// liveRefresh is how often the in-flight page reloads itself, in seconds.
const liveRefresh = 3

// holderRow is a lock held now.
type holderRow struct {
	Name, Label string
	Mode        kilolock.LockMode
	Lock        kilolock.Lock
	Held        time.Duration
}

// Kind is what the lock is: a plan's shared read lock, granted beside an
// apply and other plans, or a writer's lock under the state's lock mode
// (exclusive or optimistic).
func (h holderRow) Kind() string {
	if h.Lock.Shared {
		return "shared (plan)"
	}
	return string(h.Mode)
}

// runRow is an apply run in flight, with its reservations.
type runRow struct {
	Label string
	Run   kilolock.ApplyRun
	Lease time.Duration // left
}

// inFlight are the locks held and the apply runs in flight of some
// states: the in-flight page's, and a state page's.
type inFlight struct {
	Holders []holderRow
	Runs    []runRow
	// RunsUnsupported says the store keeps no apply runs (yet).
	RunsUnsupported bool
}

// liveData is the in-flight page.
type liveData struct {
	InFlight inFlight
	At       time.Time
}

// inFlight reads the locks held on sts and the apply runs in flight of
// the states the viewer sees, of state only when it is not "".
func (u *UI) inFlight(r *http.Request, v *visit, sts []kilolock.State, state string, now time.Time) (inFlight, error) {
	var f inFlight
	for _, st := range sts {
		for _, l := range st.Locks {
			f.Holders = append(f.Holders, holderRow{Name: st.Name, Label: v.label(st.Name), Mode: st.LockMode, Lock: l, Held: now.Sub(l.Acquired).Round(time.Second)})
		}
	}
	runs, err := applyrun.Runs(r.Context(), u.engine, kilolock.RunFilter{State: state, InFlight: true, Limit: maxListed})
	var ie *kilolock.InvalidError
	switch {
	case errors.As(err, &ie) && ie.Code == "runs_unsupported":
		f.RunsUnsupported = true
	case err != nil:
		return f, err
	}
	for _, run := range runs {
		if u.sees(v, run.State) {
			f.Runs = append(f.Runs, runRow{Label: v.label(run.State), Run: run, Lease: run.Expires.Sub(now).Round(time.Second)})
		}
	}
	return f, nil
}

// live serves GET /ui/live: every lock held on a state the viewer sees
// (applies, plans, optimistic holders) and every apply run in flight with
// its reservations and lease. It reloads itself.
func (u *UI) live(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	sts, err := u.visibleStates(r, v)
	if err != nil {
		return nil, err
	}
	d := liveData{At: u.now()}
	if d.InFlight, err = u.inFlight(r, v, sts, "", d.At); err != nil {
		return nil, err
	}
	return &view{Template: "live", Title: "In flight", Refresh: liveRefresh, Crumbs: []crumb{{Label: "in flight"}}, Data: d}, nil
}

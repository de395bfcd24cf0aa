package klcli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// RunBackend is what an orchestrated apply needs from KiloLock: apply runs
// and their reservations. Both backends implement it, with the root
// package's types and errors: an ended run is a *kilolock.RunEndedError,
// a missing one ErrNotFound.
type RunBackend interface {
	// StartRun starts a waiting run on a state (created when missing).
	StartRun(ctx context.Context, name string, req kilolock.RunRequest) (*kilolock.ApplyRun, error)
	// AcquireRun tries once to take the run's reservations: the run when
	// it holds them, else the blockers (and nothing was taken).
	AcquireRun(ctx context.Context, id string) (*kilolock.ApplyRun, []reserve.Blocker, error)
	// RenewRun extends the run's lease.
	RenewRun(ctx context.Context, id string) (*kilolock.ApplyRun, error)
	// EndRun ends the run, releasing its reservations.
	EndRun(ctx context.Context, id string, status kilolock.RunStatus, reason string) (*kilolock.ApplyRun, error)
	// AbortRun aborts the run.
	AbortRun(ctx context.Context, id string) (*kilolock.ApplyRun, error)
	// Run returns one run.
	Run(ctx context.Context, id string) (*kilolock.ApplyRun, error)
	// Runs lists a state's runs, newest first.
	Runs(ctx context.Context, name string, inFlight bool, limit int) ([]kilolock.ApplyRun, error)
	// ChangedSince lists the addresses among patterns changed after serial.
	ChangedSince(ctx context.Context, name string, serial uint64, patterns []reserve.Pattern) ([]string, error)
}

var (
	_ RunBackend = (*HTTPBackend)(nil)
)

func runPath(id string) string { return "/v1/api/runs/" + url.PathEscape(id) }

// runError turns the server's 409 run_ended into the *RunEndedError it
// stands for, so callers match it as they would in-process.
func runError(err error) error {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "run_ended" {
		return err
	}
	var body struct {
		Run *kilolock.ApplyRun `json:"run"`
	}
	if json.Unmarshal(ae.body, &body) != nil || body.Run == nil {
		return err
	}
	return &kilolock.RunEndedError{Run: body.Run}
}

// StartRun implements RunBackend. The lease travels as a Go duration.
func (b *HTTPBackend) StartRun(ctx context.Context, name string, req kilolock.RunRequest) (*kilolock.ApplyRun, error) {
	in := map[string]any{"actor": req.Actor, "info": req.Info, "reservations": req.Reservations, "source_serial": req.SourceSerial}
	if req.Lease != 0 {
		in["lease"] = req.Lease.String()
	}
	var run kilolock.ApplyRun
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/runs", nil, in, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// AcquireRun implements RunBackend: a 423 reserved is the blockers.
func (b *HTTPBackend) AcquireRun(ctx context.Context, id string) (*kilolock.ApplyRun, []reserve.Blocker, error) {
	var run kilolock.ApplyRun
	err := b.do(ctx, http.MethodPost, runPath(id)+"/acquire", nil, map[string]any{}, &run)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusLocked && ae.Code == "reserved" {
		var body struct {
			Blockers []reserve.Blocker `json:"blockers"`
		}
		if jerr := json.Unmarshal(ae.body, &body); jerr == nil && len(body.Blockers) > 0 {
			return nil, body.Blockers, nil
		}
	}
	if err != nil {
		return nil, nil, runError(err)
	}
	return &run, nil, nil
}

// RenewRun implements RunBackend.
func (b *HTTPBackend) RenewRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	return b.runCall(ctx, id, "/renew", map[string]any{})
}

// EndRun implements RunBackend.
func (b *HTTPBackend) EndRun(ctx context.Context, id string, status kilolock.RunStatus, reason string) (*kilolock.ApplyRun, error) {
	return b.runCall(ctx, id, "/end", map[string]any{"status": status, "reason": reason})
}

// AbortRun implements RunBackend.
func (b *HTTPBackend) AbortRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	return b.runCall(ctx, id, "/abort", map[string]any{})
}

func (b *HTTPBackend) runCall(ctx context.Context, id, action string, in any) (*kilolock.ApplyRun, error) {
	var run kilolock.ApplyRun
	if err := b.do(ctx, http.MethodPost, runPath(id)+action, nil, in, &run); err != nil {
		return nil, runError(err)
	}
	return &run, nil
}

// Run implements RunBackend.
func (b *HTTPBackend) Run(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	var run kilolock.ApplyRun
	if err := b.do(ctx, http.MethodGet, runPath(id), nil, nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// Runs implements RunBackend.
func (b *HTTPBackend) Runs(ctx context.Context, name string, inFlight bool, limit int) ([]kilolock.ApplyRun, error) {
	q := url.Values{}
	if inFlight {
		q.Set("in_flight", "true")
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Runs []kilolock.ApplyRun `json:"runs"`
	}
	if err := b.do(ctx, http.MethodGet, statePath(name)+"/runs", q, nil, &out); err != nil {
		return nil, err
	}
	if out.Runs == nil {
		out.Runs = []kilolock.ApplyRun{}
	}
	return out.Runs, nil
}

// ChangedSince implements RunBackend.
func (b *HTTPBackend) ChangedSince(ctx context.Context, name string, serial uint64, patterns []reserve.Pattern) ([]string, error) {
	var out struct {
		Addresses []string `json:"addresses"`
	}
	in := map[string]any{"serial": serial, "patterns": patterns}
	if err := b.do(ctx, http.MethodPost, statePath(name)+"/changed-since", nil, in, &out); err != nil {
		return nil, err
	}
	return out.Addresses, nil
}

// leaseLeft is how long a run's lease holds from now; 0 once it ran out.
func leaseLeft(r *kilolock.ApplyRun, now time.Time) time.Duration {
	return max(r.Expires.Sub(now), 0)
}

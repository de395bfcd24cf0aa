package kilolock

import (
	"context"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock/reserve"
)

// runs returns the engine's store as a RunStore.
func (e *Engine) runs() (RunStore, error) {
	rs, ok := e.store.(RunStore)
	if !ok {
		return nil, &InvalidError{Code: "runs_unsupported", Message: "this store keeps no apply runs", Hint: "use the SQLite or PostgreSQL store"}
	}
	return rs, nil
}

// StartRun starts an apply run on a state: it checks and normalizes the
// reservations and stores the run as waiting. Take them with AcquireRun
// (or use Reserve, which waits). The state is created when missing.
func (e *Engine) StartRun(ctx context.Context, name string, req RunRequest) (*ApplyRun, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	rs, err := e.runs()
	if err != nil {
		return nil, err
	}
	if len(req.Reservations) == 0 {
		return nil, &InvalidError{Code: "no_reservations", Message: "an apply run needs at least one reservation", Hint: "reserve what the apply will write (and read); `kl plan` computes it from a plan"}
	}
	if len(req.Reservations) > MaxRunReservations {
		return nil, &InvalidError{Code: "too_many_reservations", Message: fmt.Sprintf("%d reservations is more than the %d one run may take", len(req.Reservations), MaxRunReservations), Hint: "reserve whole resources or modules (module.x.*) rather than each instance"}
	}
	res, err := reserve.Normalize(req.Reservations)
	if err != nil {
		return nil, &InvalidError{Code: "invalid_reservation", Message: err.Error(), Hint: "a reservation is a pattern (an address, module.x.*, output.NAME or *) with mode read or write"}
	}
	lease := req.Lease
	if lease == 0 {
		lease = DefaultLease
	}
	if lease < MinLease || lease > MaxLease {
		return nil, &InvalidError{Code: "invalid_lease", Message: fmt.Sprintf("a lease of %s is outside %s to %s", lease, MinLease, MaxLease), Hint: "give a lease such as 15m; the run renews it every lease/3"}
	}
	if err := ValidText("actor", req.Actor, 256); err != nil {
		return nil, err
	}
	if err := ValidText("info", req.Info, 1024); err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "unknown"
	}
	run := &ApplyRun{ID: NewRunID(), State: name, Actor: actor, Info: req.Info, Reservations: res, SourceSerial: req.SourceSerial, Lease: lease}
	if err := rs.CreateRun(ctx, run, e.now().UTC()); err != nil {
		return nil, err
	}
	e.log.Info("apply run started", "state", name, "run", run.ID, "actor", run.Actor, "reservations", len(run.Reservations))
	return run, nil
}

// AcquireRun tries once to take a waiting run's reservations: all of them,
// or none and the blockers.
func (e *Engine) AcquireRun(ctx context.Context, id string) (*ApplyRun, []reserve.Blocker, error) {
	if err := ValidRunID(id); err != nil {
		return nil, nil, err
	}
	rs, err := e.runs()
	if err != nil {
		return nil, nil, err
	}
	run, blockers, err := rs.AcquireRun(ctx, id, e.now().UTC())
	if err == nil && len(blockers) == 0 {
		e.log.Info("apply run reserved", "state", run.State, "run", run.ID, "reservations", len(run.Reservations))
	}
	return run, blockers, err
}

// Reserve starts an apply run and waits, as reserve.Wait does with opts,
// until it holds its reservations. When the wait gives up the run is
// ended (failed) and a *reserve.BlockedError returned.
func (e *Engine) Reserve(ctx context.Context, name string, req RunRequest, opts reserve.WaitOptions) (*ApplyRun, error) {
	run, err := e.StartRun(ctx, name, req)
	if err != nil {
		return nil, err
	}
	if opts.State == "" {
		opts.State = name
	}
	err = reserve.Wait(ctx, func(ctx context.Context) ([]reserve.Blocker, error) {
		r, bs, err := e.AcquireRun(ctx, run.ID)
		if err == nil {
			run = r
		}
		return bs, err
	}, opts)
	if err != nil {
		end := RunEnd{Status: RunFailed, By: run.Actor, Reason: "gave up waiting for reservations"}
		if _, endErr := e.EndRun(context.WithoutCancel(ctx), run.ID, end); endErr != nil && !errors.As(endErr, new(*RunEndedError)) {
			err = errors.Join(err, endErr)
		}
		return nil, err
	}
	return run, nil
}

// RenewRun extends a run's lease. A *RunEndedError tells a run that it
// was aborted or expired.
func (e *Engine) RenewRun(ctx context.Context, id string) (*ApplyRun, error) {
	if err := ValidRunID(id); err != nil {
		return nil, err
	}
	rs, err := e.runs()
	if err != nil {
		return nil, err
	}
	return rs.RenewRun(ctx, id, e.now().UTC())
}

// EndRun ends a run and releases its reservations at once.
func (e *Engine) EndRun(ctx context.Context, id string, end RunEnd) (*ApplyRun, error) {
	if err := ValidRunID(id); err != nil {
		return nil, err
	}
	switch end.Status {
	case RunSucceeded, RunFailed, RunAborted:
	default:
		return nil, &InvalidError{Code: "invalid_run_status", Message: fmt.Sprintf("a run cannot end %q", end.Status), Hint: "end a run succeeded, failed or aborted"}
	}
	if err := ValidText("reason", end.Reason, 1024); err != nil {
		return nil, err
	}
	rs, err := e.runs()
	if err != nil {
		return nil, err
	}
	run, err := rs.EndRun(ctx, id, end, e.now().UTC())
	if err != nil {
		return nil, err
	}
	level := e.log.Info
	if end.Status == RunAborted {
		level = e.log.Warn
	}
	level("apply run ended", "state", run.State, "run", run.ID, "status", run.Status, "by", end.By, "reason", end.Reason)
	return run, nil
}

// AbortRun aborts a run: its reservations are released at once, its
// orchestrator learns it when it next asks (Run, or its next renewal: kl
// asks every second), and the store refuses any later write under it.
func (e *Engine) AbortRun(ctx context.Context, id, by string) (*ApplyRun, error) {
	return e.EndRun(ctx, id, RunEnd{Status: RunAborted, By: by, Reason: "aborted"})
}

// Run returns one apply run.
func (e *Engine) Run(ctx context.Context, id string) (*ApplyRun, error) {
	if err := ValidRunID(id); err != nil {
		return nil, err
	}
	rs, err := e.runs()
	if err != nil {
		return nil, err
	}
	return rs.Run(ctx, id, e.now().UTC())
}

// Runs lists apply runs, newest first.
func (e *Engine) Runs(ctx context.Context, f RunFilter) ([]ApplyRun, error) {
	if f.State != "" {
		if err := ValidStateName(f.State); err != nil {
			return nil, err
		}
	}
	rs, err := e.runs()
	if err != nil {
		return nil, err
	}
	return rs.Runs(ctx, f, e.now().UTC())
}

// LatestRun returns the newest in-flight run of a state; ErrNotFound when
// none is in flight.
func (e *Engine) LatestRun(ctx context.Context, name string) (*ApplyRun, error) {
	runs, err := e.Runs(ctx, RunFilter{State: name, InFlight: true, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("state %q has no apply run in flight: %w", name, ErrNotFound)
	}
	return &runs[0], nil
}

// ChangedSince lists the addresses among patterns that versions after
// serial changed: what invalidates a plan made at that serial. An
// unknown serial (a state rolled back, or another lineage) is an
// *InvalidError.
func (e *Engine) ChangedSince(ctx context.Context, name string, serial uint64, patterns []reserve.Pattern) ([]string, error) {
	v, err := e.store.VersionBySerial(ctx, name, serial)
	if errors.Is(err, ErrNotFound) {
		return nil, &InvalidError{Code: "unknown_source_serial", Message: fmt.Sprintf("state %q has no version with serial %d, which the plan read", name, serial), Hint: "plan again against the current state"}
	}
	if err != nil {
		return nil, err
	}
	recs, err := e.store.ChangesSince(ctx, name, v.Number)
	if err != nil {
		return nil, err
	}
	x := reserve.NewIndex(nil)
	for _, p := range patterns {
		x.Add(reserve.Hold{Reservation: Reservation{Pattern: p, Mode: reserve.Read}})
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		k := r.ID
		if r.Output {
			k = "output." + r.ID
		}
		if seen[k] {
			continue
		}
		p, err := reserve.ParseKey(k)
		if err != nil {
			continue
		}
		hit := false
		x.Meeting(p, func(reserve.Hold) bool { hit = true; return false })
		if hit {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}

package applyrun

import (
	"context"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/reserve"
)

// runStore returns the engine's store as a RunStore.
func runStore(e *kilolock.Engine) (kilolock.RunStore, error) {
	rs, ok := e.Store().(kilolock.RunStore)
	if !ok {
		return nil, &kilolock.InvalidError{Code: "runs_unsupported", Message: "this store keeps no apply runs", Hint: "use the SQLite or PostgreSQL store"}
	}
	return rs, nil
}

// StartRun starts an apply run on a state: it checks and normalizes the
// reservations and stores the run as waiting. Take them with AcquireRun
// (or use Reserve, which waits). The state is created when missing.
func StartRun(ctx context.Context, e *kilolock.Engine, name string, req kilolock.RunRequest) (*kilolock.ApplyRun, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	rs, err := runStore(e)
	if err != nil {
		return nil, err
	}
	if len(req.Reservations) == 0 {
		return nil, &kilolock.InvalidError{Code: "no_reservations", Message: "an apply run needs at least one reservation", Hint: "reserve what the apply will write (and read); `kl plan` computes it from a plan"}
	}
	if len(req.Reservations) > kilolock.MaxRunReservations {
		return nil, &kilolock.InvalidError{Code: "too_many_reservations", Message: fmt.Sprintf("%d reservations is more than the %d one run may take", len(req.Reservations), kilolock.MaxRunReservations), Hint: "reserve whole resources or modules (module.x.*) rather than each instance"}
	}
	res, err := reserve.Normalize(req.Reservations)
	if err != nil {
		return nil, &kilolock.InvalidError{Code: "invalid_reservation", Message: err.Error(), Hint: "a reservation is a pattern (an address, module.x.*, output.NAME or *) with mode read or write"}
	}
	lease := req.Lease
	if lease == 0 {
		lease = kilolock.DefaultLease
	}
	if lease < kilolock.MinLease || lease > kilolock.MaxLease {
		return nil, &kilolock.InvalidError{Code: "invalid_lease", Message: fmt.Sprintf("a lease of %s is outside %s to %s", lease, kilolock.MinLease, kilolock.MaxLease), Hint: "give a lease such as 15m; the run renews it every lease/3"}
	}
	if err := kilolock.ValidText("actor", req.Actor, 256); err != nil {
		return nil, err
	}
	if err := kilolock.ValidText("info", req.Info, 1024); err != nil {
		return nil, err
	}
	actor := req.Actor
	if actor == "" {
		actor = "unknown"
	}
	run := &kilolock.ApplyRun{ID: kilolock.NewRunID(), State: name, Actor: actor, Info: req.Info, Reservations: res, SourceSerial: req.SourceSerial, Lease: lease}
	if err := rs.CreateRun(ctx, run, e.Now().UTC()); err != nil {
		return nil, err
	}
	e.Logger().Info("apply run started", "state", name, "run", run.ID, "actor", run.Actor, "reservations", len(run.Reservations))
	return run, nil
}

// AcquireRun tries once to take a waiting run's reservations: all of them,
// or none and the blockers.
func AcquireRun(ctx context.Context, e *kilolock.Engine, id string) (*kilolock.ApplyRun, []reserve.Blocker, error) {
	if err := kilolock.ValidRunID(id); err != nil {
		return nil, nil, err
	}
	rs, err := runStore(e)
	if err != nil {
		return nil, nil, err
	}
	run, blockers, err := rs.AcquireRun(ctx, id, e.Now().UTC())
	if err == nil && len(blockers) == 0 {
		e.Logger().Info("apply run reserved", "state", run.State, "run", run.ID, "reservations", len(run.Reservations))
	}
	return run, blockers, err
}

// Reserve starts an apply run and waits, as reserve.Wait does with opts,
// until it holds its reservations. When the wait gives up the run is
// ended (failed) and a *reserve.BlockedError returned.
func Reserve(ctx context.Context, e *kilolock.Engine, name string, req kilolock.RunRequest, opts reserve.WaitOptions) (*kilolock.ApplyRun, error) {
	run, err := StartRun(ctx, e, name, req)
	if err != nil {
		return nil, err
	}
	if opts.State == "" {
		opts.State = name
	}
	err = reserve.Wait(ctx, func(ctx context.Context) ([]reserve.Blocker, error) {
		r, bs, err := AcquireRun(ctx, e, run.ID)
		if err == nil {
			run = r
		}
		return bs, err
	}, opts)
	if err != nil {
		end := kilolock.RunEnd{Status: kilolock.RunFailed, By: run.Actor, Reason: "gave up waiting for reservations"}
		if _, endErr := EndRun(context.WithoutCancel(ctx), e, run.ID, end); endErr != nil && !errors.As(endErr, new(*kilolock.RunEndedError)) {
			err = errors.Join(err, endErr)
		}
		return nil, err
	}
	return run, nil
}

// RenewRun extends a run's lease. A *RunEndedError tells a run that it
// was aborted or expired.
func RenewRun(ctx context.Context, e *kilolock.Engine, id string) (*kilolock.ApplyRun, error) {
	if err := kilolock.ValidRunID(id); err != nil {
		return nil, err
	}
	rs, err := runStore(e)
	if err != nil {
		return nil, err
	}
	return rs.RenewRun(ctx, id, e.Now().UTC())
}

// EndRun ends a run and releases its reservations at once.
func EndRun(ctx context.Context, e *kilolock.Engine, id string, end kilolock.RunEnd) (*kilolock.ApplyRun, error) {
	if err := kilolock.ValidRunID(id); err != nil {
		return nil, err
	}
	switch end.Status {
	case kilolock.RunSucceeded, kilolock.RunFailed, kilolock.RunAborted:
	default:
		return nil, &kilolock.InvalidError{Code: "invalid_run_status", Message: fmt.Sprintf("a run cannot end %q", end.Status), Hint: "end a run succeeded, failed or aborted"}
	}
	if err := kilolock.ValidText("reason", end.Reason, 1024); err != nil {
		return nil, err
	}
	rs, err := runStore(e)
	if err != nil {
		return nil, err
	}
	run, err := rs.EndRun(ctx, id, end, e.Now().UTC())
	if err != nil {
		return nil, err
	}
	level := e.Logger().Info
	if end.Status == kilolock.RunAborted {
		level = e.Logger().Warn
	}
	level("apply run ended", "state", run.State, "run", run.ID, "status", run.Status, "by", end.By, "reason", end.Reason)
	return run, nil
}

// AbortRun aborts a run: its reservations are released at once, its
// orchestrator learns it when it next asks (Run, or its next renewal: kl
// asks every second), and the store refuses any later write under it.
func AbortRun(ctx context.Context, e *kilolock.Engine, id, by string) (*kilolock.ApplyRun, error) {
	return EndRun(ctx, e, id, kilolock.RunEnd{Status: kilolock.RunAborted, By: by, Reason: "aborted"})
}

// Run returns one apply run.
func Run(ctx context.Context, e *kilolock.Engine, id string) (*kilolock.ApplyRun, error) {
	if err := kilolock.ValidRunID(id); err != nil {
		return nil, err
	}
	rs, err := runStore(e)
	if err != nil {
		return nil, err
	}
	return rs.Run(ctx, id, e.Now().UTC())
}

// Runs lists apply runs, newest first.
func Runs(ctx context.Context, e *kilolock.Engine, f kilolock.RunFilter) ([]kilolock.ApplyRun, error) {
	if f.State != "" {
		if err := kilolock.ValidStateName(f.State); err != nil {
			return nil, err
		}
	}
	rs, err := runStore(e)
	if err != nil {
		return nil, err
	}
	return rs.Runs(ctx, f, e.Now().UTC())
}

// LatestRun returns the newest in-flight run of a state; ErrNotFound when
// none is in flight.
func LatestRun(ctx context.Context, e *kilolock.Engine, name string) (*kilolock.ApplyRun, error) {
	runs, err := Runs(ctx, e, kilolock.RunFilter{State: name, InFlight: true, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("state %q has no apply run in flight: %w", name, kilolock.ErrNotFound)
	}
	return &runs[0], nil
}

// ChangedSince lists the addresses among patterns that versions after
// serial changed: what invalidates a plan made at that serial. An
// unknown serial (a state rolled back, or another lineage) is an
// *InvalidError.
func ChangedSince(ctx context.Context, e *kilolock.Engine, name string, serial uint64, patterns []reserve.Pattern) ([]string, error) {
	v, err := e.Store().VersionBySerial(ctx, name, serial)
	if errors.Is(err, kilolock.ErrNotFound) {
		return nil, &kilolock.InvalidError{Code: "unknown_source_serial", Message: fmt.Sprintf("state %q has no version with serial %d, which the plan read", name, serial), Hint: "plan again against the current state"}
	}
	if err != nil {
		return nil, err
	}
	recs, err := e.Store().ChangesSince(ctx, name, v.Number)
	if err != nil {
		return nil, err
	}
	x := reserve.NewIndex(nil)
	for _, p := range patterns {
		x.Add(reserve.Hold{Reservation: kilolock.Reservation{Pattern: p, Mode: reserve.Read}})
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

// LockRun takes the lock of an apply run's CLI apply: granted beside the
// locks of other runs on an exclusive state too, as long as the run holds
// its reservations; what it writes is held to them.
func LockRun(ctx context.Context, e *kilolock.Engine, name, run string, info kilolock.LockInfo) (*kilolock.Lock, error) {
	return e.LockWith(ctx, name, info, kilolock.LockRequest{Run: run})
}

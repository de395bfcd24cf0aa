package klcli

import (
	"context"
	"errors"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"

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

// StartRun implements RunBackend. The lease travels as a Go duration.
func (b *HTTPBackend) StartRun(ctx context.Context, name string, req kilolock.RunRequest) (*kilolock.ApplyRun, error) {
	lease := ""
	if req.Lease != 0 {
		lease = req.Lease.String()
	}
	return ok(b.c.StartRun(ctx, name, client.RunRequest{Actor: req.Actor, Info: req.Info, Reservations: req.Reservations, SourceSerial: req.SourceSerial, Lease: lease}))
}

// AcquireRun implements RunBackend: a 423 reserved is the blockers.
func (b *HTTPBackend) AcquireRun(ctx context.Context, id string) (*kilolock.ApplyRun, []reserve.Blocker, error) {
	run, err := b.c.AcquireRun(ctx, id)
	var re *kilolock.ReservedError
	if errors.As(err, &re) && len(re.Blockers) > 0 {
		return nil, re.Blockers, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return run, nil, nil
}

// RenewRun implements RunBackend.
func (b *HTTPBackend) RenewRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	return ok(b.c.RenewRun(ctx, id))
}

// EndRun implements RunBackend.
func (b *HTTPBackend) EndRun(ctx context.Context, id string, status kilolock.RunStatus, reason string) (*kilolock.ApplyRun, error) {
	return ok(b.c.EndRun(ctx, id, client.RunEndRequest{Status: status, Reason: reason}))
}

// AbortRun implements RunBackend.
func (b *HTTPBackend) AbortRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	return ok(b.c.AbortRun(ctx, id))
}

// Run implements RunBackend.
func (b *HTTPBackend) Run(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	return ok(b.c.Run(ctx, id))
}

// Runs implements RunBackend.
func (b *HTTPBackend) Runs(ctx context.Context, name string, inFlight bool, limit int) ([]kilolock.ApplyRun, error) {
	l, err := b.c.Runs(ctx, name, client.RunsOptions{InFlight: inFlight, Limit: limit})
	if err != nil {
		return nil, err
	}
	return nonNil(l.Runs), nil
}

// ChangedSince implements RunBackend.
func (b *HTTPBackend) ChangedSince(ctx context.Context, name string, serial uint64, patterns []reserve.Pattern) ([]string, error) {
	l, err := b.c.ChangedSince(ctx, name, client.ChangedSinceRequest{Serial: serial, Patterns: patterns})
	if err != nil {
		return nil, err
	}
	return l.Addresses, nil
}

// leaseLeft is how long a run's lease holds from now; 0 once it ran out.
func leaseLeft(r *kilolock.ApplyRun, now time.Time) time.Duration {
	return max(r.Expires.Sub(now), 0)
}

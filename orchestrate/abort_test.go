package orchestrate

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/client"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// activeRun starts and acquires a run on state s with the default lease
// (renewed every 5 minutes).
func activeRun(t *testing.T, e *kilolock.Engine) *kilolock.ApplyRun {
	t.Helper()
	ctx := t.Context()
	run, err := applyrun.StartRun(ctx, e, "s", kilolock.RunRequest{Actor: "alice", Reservations: []kilolock.Reservation{{Pattern: reserve.MustParse("terraform_data.a"), Mode: reserve.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	if run, _, err = applyrun.AcquireRun(ctx, e, run.ID); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestWatchRunSeesAbort: a running orchestrated apply learns that its run
// was aborted within a poll or two, not at its next renewal (a third of
// the lease: 5 minutes by default), and interrupts its CLI.
func TestWatchRunSeesAbort(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *kilolock.Engine, clients map[string]*client.Client) {
		for _, name := range []string{"engine", "http"} {
			t.Run(name, func(t *testing.T) {
				run := activeRun(t, e)
				o := &orchestration{req: ApplyRequest{Runs: clients[name], Stderr: io.Discard}, run: run}
				interrupted := make(chan struct{})
				stop := o.watchRun(t.Context(), func() { close(interrupted) })
				defer stop()
				if _, err := applyrun.AbortRun(t.Context(), e, run.ID, "ops"); err != nil {
					t.Fatal(err)
				}
				select {
				case <-interrupted:
				case <-time.After(5 * runPoll):
					t.Fatalf("the watch did not see the abort within %s (lease %s)", 5*runPoll, run.Lease)
				}
				if ended := o.endedRun(); ended == nil || ended.Status != kilolock.RunAborted || ended.EndedBy != "ops" {
					t.Errorf("the watch recorded %+v, want the run aborted by ops", ended)
				}
			})
		}
	})
}

// TestAbortedOrAsksTheRun: a CLI that failed because its write was
// refused (the run ended before kl saw it) is an *AbortedError (kl exits
// 7), not the CLI's failure (8).
func TestAbortedOrAsksTheRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *kilolock.Engine, clients map[string]*client.Client) {
		run := activeRun(t, e)
		if _, err := applyrun.AbortRun(t.Context(), e, run.ID, "ops"); err != nil {
			t.Fatal(err)
		}
		o := &orchestration{req: ApplyRequest{Runs: clients["http"], Dir: t.TempDir()}, run: run}
		refused := &CLIError{Command: "apply", Err: errors.New("exit status 1\nError: Failed to save state: HTTP error: 409")}
		err := o.abortedOr(t.Context(), refused)
		var ae *AbortedError
		if !errors.As(err, &ae) || ae.Stopped != nil || errors.As(err, new(*CLIError)) {
			t.Fatalf("abortedOr = %#v, want an *AbortedError of a refused write, not the CLI's failure", err)
		}
		if o.endedRun() == nil {
			t.Error("the ended run was not recorded: kl would try to end it failed")
		}

		// A failure while the run is active stays the CLI's.
		e2, clients2 := served(t, filepath.Join(t.TempDir(), "other.db"))
		o = &orchestration{req: ApplyRequest{Runs: clients2["http"]}, run: activeRun(t, e2)}
		if err := o.abortedOr(t.Context(), refused); err != refused {
			t.Errorf("abortedOr of an active run's failure = %v, want the CLI's error", err)
		}
	})
}

// TestCLIErrorOfSuccess: a CLI command that succeeded is no error (an
// orchestrated apply ended its successful run as failed, and kl
// panicked, when it was).
func TestCLIErrorOfSuccess(t *testing.T) {
	if err := cliError("apply", nil); err != nil {
		t.Fatalf("cliError(apply, nil) = %#v, want nil", err)
	}
}

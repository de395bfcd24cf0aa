package klcli

import (
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/client"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/reserve"
	"github.com/kilolock/kilolock/store"
)

// activeRun starts and acquires a run with the default lease (renewed
// every 5 minutes) on a fresh SQLite store, and returns the engine, the
// run and each client kl reaches it through.
func activeRun(t *testing.T) (*kilolock.Engine, *kilolock.ApplyRun, map[string]*client.Client) {
	t.Helper()
	ctx := t.Context()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "kl.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := kilolock.NewEngine(s, kilolock.Options{Logger: log.New(io.Discard)})
	run, err := applyrun.StartRun(ctx, e, "s", kilolock.RunRequest{Actor: "alice", Reservations: []kilolock.Reservation{{Pattern: reserve.MustParse("terraform_data.a"), Mode: reserve.Write}}})
	if err != nil {
		t.Fatal(err)
	}
	if run, _, err = applyrun.AcquireRun(ctx, e, run.ID); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{Logger: log.New(io.Discard)}))
	t.Cleanup(srv.Close)
	hb, err := NewConn(srv.URL, HTTPOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Close() })
	return e, run, map[string]*client.Client{"engine": NewDatabaseConn(e, HTTPOptions{}).api, "http": hb.api}
}

// TestWatchRunSeesAbort: a running orchestrated apply learns that its run
// was aborted within a poll or two, not at its next renewal (a third of
// the lease: 5 minutes by default), and interrupts its CLI.
func TestWatchRunSeesAbort(t *testing.T) {
	for _, name := range []string{"engine", "http"} {
		t.Run(name, func(t *testing.T) {
			e, run, backends := activeRun(t)
			o := &orchestration{req: ApplyRequest{Runs: backends[name], Stderr: io.Discard}, run: run}
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
}

// TestAbortedOrAsksTheRun: a CLI that failed because its write was
// refused (the run ended before kl saw it) makes kl exit 7, aborted, not
// 8, the CLI failed.
func TestAbortedOrAsksTheRun(t *testing.T) {
	e, run, backends := activeRun(t)
	if _, err := applyrun.AbortRun(t.Context(), e, run.ID, "ops"); err != nil {
		t.Fatal(err)
	}
	o := &orchestration{req: ApplyRequest{Runs: backends["http"], Dir: t.TempDir()}, run: run}
	refused := &CLIError{Command: "apply", Err: errors.New("exit status 1\nError: Failed to save state: HTTP error: 409")}
	err := o.abortedOr(t.Context(), refused)
	var ae *AbortedError
	if !errors.As(err, &ae) || ExitCode(err) != ExitAborted || ae.Stopped != nil {
		t.Fatalf("abortedOr = %v (exit %d), want an *AbortedError of a refused write (exit 7)", err, ExitCode(err))
	}
	if o.endedRun() == nil {
		t.Error("the ended run was not recorded: kl would try to end it failed")
	}

	// A failure while the run is active stays the CLI's.
	_, active, b := activeRun(t)
	o = &orchestration{req: ApplyRequest{Runs: b["http"]}, run: active}
	if err := o.abortedOr(t.Context(), refused); err != refused || ExitCode(err) != ExitCLI {
		t.Errorf("abortedOr of an active run's failure = %v, want the CLI's error (exit 8)", err)
	}
}

package klcli_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/klcli"
	"github.com/kilolock/kilolock/reserve"
)

// TestStatusRunsAndAbort: kl status lists a run in flight with its
// reservations and lease left; kl apply abort ends it; aborting it again,
// or --latest with none in flight, is an error — through a server and on
// the database alike.
func TestStatusRunsAndAbort(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := t.Context()
		run, err := applyrun.StartRun(ctx, h.engine, "staging", kilolock.RunRequest{
			Actor: "alice@laptop", Info: "kl apply --orchestrated -f slow_a.tf", Lease: 10 * time.Minute,
			Reservations: []kilolock.Reservation{
				{Pattern: reserve.MustParse("time_sleep.slow_a"), Mode: reserve.Write},
				{Pattern: reserve.MustParse("terraform_data.base"), Mode: reserve.Read},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, bs, err := applyrun.AcquireRun(ctx, h.engine, run.ID); err != nil || len(bs) > 0 {
			t.Fatalf("acquire: %v %v", bs, err)
		}
		var out bytes.Buffer
		cli := &klcli.CLI{Conn: h.raw, Out: &out}
		if err := cli.Status(ctx, "staging"); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"APPLY RUN", run.ID, "alice@laptop", "active", "2 (1 write, 1 read)", "time_sleep.slow_a", "terraform_data.base"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("kl status does not show %q:\n%s", want, out.String())
			}
		}
		if !strings.Contains(out.String(), "  9m5") && !strings.Contains(out.String(), "  10m0s") {
			t.Errorf("kl status does not show the lease left (about 10m):\n%s", out.String())
		}

		out.Reset()
		if err := cli.Abort(ctx, "", "staging"); err != nil {
			t.Fatalf("abort --latest: %v", err)
		}
		if !strings.Contains(out.String(), "aborted apply run "+run.ID) {
			t.Errorf("kl apply abort says:\n%s", out.String())
		}
		got, err := applyrun.Run(ctx, h.engine, run.ID)
		if err != nil || got.Status != kilolock.RunAborted {
			t.Fatalf("the run after abort: %+v, %v", got, err)
		}
		err = cli.Abort(ctx, run.ID, "")
		if !errors.As(err, new(*kilolock.RunEndedError)) || klcli.ExitCode(err) != klcli.ExitConflict {
			t.Errorf("aborting an aborted run: %v (exit %d), want a RunEndedError (exit 4)", err, klcli.ExitCode(err))
		}
		err = cli.Abort(ctx, "", "staging")
		if klcli.ExitCode(err) != klcli.ExitNotFound || !strings.Contains(err.Error(), "no apply run in flight") {
			t.Errorf("--latest with none in flight: %v (exit %d), want exit 3", err, klcli.ExitCode(err))
		}
	})
}

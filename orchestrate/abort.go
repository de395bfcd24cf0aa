package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kilolock/kilolock"
)

// runPoll is how often a running orchestrated apply asks whether its run
// is still active, between the renewals of its lease: an abort stops the
// apply within about this long, whatever the lease. The question is one
// GET of the run, a primary-key read. A long poll or a stream would hold a
// connection per running apply, and every kld replica would have to hear
// of an abort another replica took; a read of the database has it at once
// on any of them.
const runPoll = time.Second

// AbortedError is an orchestrated apply whose run was aborted, or whose
// lease ran out, while it applied: kl stopped its CLI (or found the CLI's
// write refused, the run being over), and the server took none of the
// run's writes after it ended.
type AbortedError struct {
	Run *kilolock.ApplyRun
	// Stopped says how kl stopped the CLI; nil when the CLI had ended on
	// its own (its write refused: 409 apply_run_ended).
	Stopped *StoppedError
	// Dir is the configuration directory; Errored the errored.tfstate the
	// stopped CLI wrote there ("" when it wrote none).
	Dir, Errored string
}

func (e *AbortedError) Error() string {
	r := e.Run
	msg := fmt.Sprintf("apply run %s was %s", r.ID, r.Status)
	if r.EndedBy != "" {
		msg += " by " + r.EndedBy
	}
	if e.Stopped != nil {
		msg += "; its apply was stopped (the CLI was " + e.Stopped.how() + ")"
	} else {
		msg += "; the server refused the apply's write (409 apply_run_ended)"
	}
	if e.Errored != "" {
		return msg + "; nothing of it was committed, and the CLI saved what it could not write in " + e.Errored
	}
	return msg + "; nothing of it was committed, and the CLI saved no errored.tfstate"
}

// Hint says what is left behind and what to do with it.
func (e *AbortedError) Hint() string {
	if e.Errored != "" {
		return fmt.Sprintf("%s holds what the stopped apply had changed in the infrastructure, which the state lacks: compare it with the state (tofu state pull), "+
			"keep it with `tofu state push errored.tfstate` in %s if it is right (refused if the state moved since: then plan and apply again), and delete it; "+
			"kl apply --orchestrated starts a new run", e.Errored, e.Dir)
	}
	return "infrastructure the stopped apply had already changed may be missing from the state: `tofu plan` in " + e.Dir +
		" shows it; kl apply --orchestrated starts a new run"
}

// heartbeat is how often the run's lease is renewed: a third of it.
func (o *orchestration) heartbeat() time.Duration {
	return max(o.run.Lease/3, 500*time.Millisecond)
}

// watchRun renews the run's lease every heartbeat and, every runPoll in
// between, asks whether the run is still active. When it finds the run
// over (aborted, or expired), it records that and calls interrupt, which
// stops the CLI. It returns the stop function, which waits for the watch
// to finish.
func (o *orchestration) watchRun(ctx context.Context, interrupt func()) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(min(runPoll, o.heartbeat()))
		defer t.Stop()
		renewed := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var (
				run   *kilolock.ApplyRun
				err   error
				renew = time.Since(renewed) >= o.heartbeat()
			)
			if renew {
				if run, err = o.req.Runs.RenewRun(ctx, o.run.ID); err == nil {
					renewed = time.Now()
				}
			} else {
				run, err = o.req.Runs.Run(ctx, o.run.ID)
			}
			var ended *kilolock.RunEndedError
			switch {
			case errors.As(err, &ended):
				run = ended.Run
			case err != nil:
				if renew && ctx.Err() == nil {
					o.warnf("renewing apply run %s failed (retrying; the lease holds %s from the last renewal): %v", o.run.ID, o.run.Lease, err)
				}
				continue // a failed poll is asked again at the next tick
			}
			if run.Status.Ended() {
				o.setEnded(run)
				o.printf("apply run %s is %s: stopping the apply (interrupt, then kill after %s)", o.run.ID, run.Status, abortGrace)
				interrupt()
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

func (o *orchestration) endedRun() *kilolock.ApplyRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ended
}

// setEnded records that the run is over, and returns it.
func (o *orchestration) setEnded(run *kilolock.ApplyRun) *kilolock.ApplyRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended == nil {
		o.ended = run
	}
	return o.ended
}

// abortedOr returns an *AbortedError when the run ended under the apply
// (the CLI's failure is what stopping it, or its refused write, looks
// like), else err. A CLI that failed before the watch saw the run end may
// have had its write refused because it ended (409 apply_run_ended): the
// run is asked once more.
func (o *orchestration) abortedOr(ctx context.Context, err error) error {
	if o.endedRun() == nil && !errors.Is(err, context.Canceled) {
		if run, rerr := o.req.Runs.Run(context.WithoutCancel(ctx), o.run.ID); rerr == nil && run.Status.Ended() {
			o.setEnded(run)
		}
	}
	ended := o.endedRun()
	if ended == nil {
		return err
	}
	e := o.aborted(ended)
	errors.As(err, &e.Stopped)
	return e
}

// aborted is the *AbortedError of the ended run: with the errored.tfstate
// the CLI wrote since its apply started, if it did.
func (o *orchestration) aborted(run *kilolock.ApplyRun) *AbortedError {
	e := &AbortedError{Run: run, Dir: absPath(o.req.Dir)}
	o.mu.Lock()
	started := o.applying
	o.mu.Unlock()
	path := filepath.Join(e.Dir, "errored.tfstate")
	if fi, err := os.Stat(path); err == nil && !started.IsZero() && !fi.ModTime().Before(started.Add(-time.Second)) {
		e.Errored = path
	}
	return e
}

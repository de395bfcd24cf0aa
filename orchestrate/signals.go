package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// errReaderGone ends kl's context when a reader of its output went away.
var errReaderGone = errors.New("the reader of kl's output went away (SIGPIPE)")

// SignalContext returns kl's context: it ends on Ctrl-C (SIGINT) or
// SIGTERM, and when a reader of kl's output went away (SIGPIPE while
// stdout or stderr is a pipe no one reads, as under `kl drift check |
// head`). kl then stops the IaC CLI gracefully, which releases the state
// lock it took, and ends its apply run, instead of dying with both held.
// A SIGPIPE of another descriptor (a connection to kld) ends nothing: its
// request fails on its own. stop releases the signals.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	// Notified, SIGPIPE no longer kills kl: a write to a gone reader
	// fails with EPIPE, which the caller's output path should drop (kl's does).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sigs:
				switch {
				case s != syscall.SIGPIPE:
					cancel(fmt.Errorf("kl got %v", s))
				case readerGone(int(os.Stdout.Fd()), int(os.Stderr.Fd())):
					cancel(errReaderGone)
				default:
					continue
				}
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

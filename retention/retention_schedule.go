package retention

import (
	"context"
	"os"
	"time"

	"github.com/kilolock/kilolock"
)

// ScheduledRetentionActor is who kld's scheduled pruning is recorded as
// (history's markers and the audit log), with the host in Caller.From.
const ScheduledRetentionActor = "kld:retention"

// RetainEvery runs ApplyRetention over every state at once and then every
// interval until ctx ends, pruning in transactions of batch versions (0:
// the default), as ScheduledRetentionActor. A failed run is logged and
// the next one tries again; several kld replicas may each run it, since
// every batch re-checks what it prunes under the state's row lock. It
// returns when ctx is done; an interval of 0 or less returns at once.
func RetainEvery(ctx context.Context, e *kilolock.Engine, interval time.Duration, batch int) {
	if interval <= 0 {
		return
	}
	host, _ := os.Hostname()
	by := kilolock.Caller{Actor: ScheduledRetentionActor, From: host}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rep, err := ApplyRetention(ctx, e, RetentionOptions{Batch: batch, By: by})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			e.Logger().Error("scheduled retention failed; it runs again at the next interval", "err", err, "interval", interval)
		case rep.Versions > 0:
			e.Logger().Info("scheduled retention", "versions", rep.Versions, "intervals", rep.Intervals, "payloads", rep.Payloads, "states", len(rep.States))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

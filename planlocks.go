package kilolock

import (
	"context"
	"time"
)

// EndPlanLocks ends the plans' locks held longer than limit on every state
// (see Store.EndPlanLocks), logging each one, and returns them. A plan
// never writes, so this loses no work: it frees the lock a plan's CLI
// left when it died mid-plan (killed, or its kl killed by SIGPIPE), which
// would otherwise show in kl status forever and pin its base version
// against retention. The CLI, if it still runs, finds its lock gone when
// it unlocks, and says so.
func (e *Engine) EndPlanLocks(ctx context.Context, limit time.Duration) ([]StateLock, error) {
	ended, err := e.store.EndPlanLocks(ctx, e.now().Add(-limit))
	if err != nil {
		return nil, err
	}
	for _, l := range ended {
		e.log.Warn("ended a plan's lock held past the limit", "state", l.State, "lock_id", l.Lock.Info.ID, "holder", l.Lock.Info.Who,
			"held_for", e.now().Sub(l.Lock.Acquired).Round(time.Second), "limit", limit)
	}
	return ended, nil
}

// EndPlanLocksEvery runs EndPlanLocks with limit until ctx ends, every
// quarter of limit (between 1 s and 1 min), so that a plan's lock ends
// at most that long after limit. Several kld replicas may each run it. A
// limit of 0 or less returns at once: plans' locks are kept until released.
func (e *Engine) EndPlanLocksEvery(ctx context.Context, limit time.Duration) {
	if limit <= 0 {
		return
	}
	t := time.NewTicker(min(max(limit/4, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := e.EndPlanLocks(ctx, limit); err != nil && ctx.Err() == nil {
			e.log.Error("ending plans' locks held past the limit failed; it runs again", "err", err, "limit", limit)
		}
	}
}

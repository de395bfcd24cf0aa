package httpbackend

import (
	"context"

	"github.com/kilolock/kilolock"
)

// lockRun takes the lock of apply run on a state. It stands in for
// Engine.LockRun until the stores keep runs; delete it then.
func lockRun(ctx context.Context, e *kilolock.Engine, name, run string, info kilolock.LockInfo) (*kilolock.Lock, error) {
	if _, err := e.Run(ctx, run); err != nil {
		return nil, err
	}
	return nil, &kilolock.InvalidError{Code: "runs_unsupported", Message: "this server cannot lock for an apply run yet", Hint: "use a plain lock"}
}

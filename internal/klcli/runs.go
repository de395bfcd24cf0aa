package klcli

import (
	"time"

	"github.com/kilolock/kilolock"
)

// leaseLeft is how long a run's lease holds from now; 0 once it ran out.
func leaseLeft(r *kilolock.ApplyRun, now time.Time) time.Duration {
	return max(r.Expires.Sub(now), 0)
}

package klcli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// maxShownReservations bounds the reservation rows kl status prints per
// run; --json has them all.
const maxShownReservations = 20

// writeRuns prints the apply runs in flight: one row per run, then its
// reservations.
func (c *CLI) writeRuns(runs []kilolock.ApplyRun, now time.Time) error {
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintln(c.Out)
	w := c.table()
	row(w, "APPLY RUN", "ACTOR", "STATUS", "LEASE LEFT", "RESERVATIONS")
	for i := range runs {
		r := &runs[i]
		writes := 0
		for _, res := range r.Reservations {
			if res.Mode == reserve.Write {
				writes++
			}
		}
		row(w, r.ID, orDash(r.Actor), string(r.StatusAt(now)), formatAge(leaseLeft(r, now)),
			fmt.Sprintf("%d (%d write, %d read)", len(r.Reservations), writes, len(r.Reservations)-writes))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(c.Out)
	w = c.table()
	row(w, "APPLY RUN", "RESERVED", "MODE")
	for i := range runs {
		r := &runs[i]
		for j, res := range r.Reservations {
			if j == maxShownReservations {
				row(w, r.ID, "… and "+strconv.Itoa(len(r.Reservations)-j)+" more (--json lists them)", "")
				break
			}
			row(w, r.ID, cell(res.Pattern.String()), string(res.Mode))
		}
	}
	return w.Flush()
}

// leaseLeft is how long a run's lease holds from now; 0 once it ran out.
func leaseLeft(r *kilolock.ApplyRun, now time.Time) time.Duration {
	return max(r.Expires.Sub(now), 0)
}

package klcli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock"
)

// StatesJSON is the JSON output of States, as the server's API answers it.
type StatesJSON struct {
	States []kilolock.StateInfo `json:"states"`
}

// States lists every state: current version and serial, lock mode and who
// holds it.
func (c *CLI) States(ctx context.Context) error {
	sts, err := c.Backend.States(ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return c.writeJSON(StatesJSON{States: sts})
	}
	if len(sts) == 0 {
		_, err := fmt.Fprintln(c.Out, "no states yet")
		return err
	}
	w := c.table()
	row(w, "NAME", "VERSION", "SERIAL", "LOCK MODE", "LOCKED BY", "CREATED")
	for _, s := range sts {
		version, serial := "-", "-"
		if s.Current > 0 {
			version, serial = strconv.FormatInt(s.Current, 10), strconv.FormatUint(s.Serial, 10)
		}
		row(w, cell(s.Name), version, serial, string(s.LockMode), holders(s.Locks), formatTime(s.Created))
	}
	return w.Flush()
}

// holders names who holds locks, "-" for nobody.
func holders(locks []kilolock.Lock) string {
	if len(locks) == 0 {
		return "-"
	}
	who := make([]string, len(locks))
	for i, l := range locks {
		who[i] = orDash(l.Info.Who)
	}
	return strings.Join(who, ", ")
}

package klcli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/kilolock/kilolock"
)

// HistoryJSON is the JSON output of History.
type HistoryJSON struct {
	State string `json:"state"`
	// Current is the state's current version number, 0 before the first
	// write.
	Current  int64              `json:"current_version"`
	Versions []kilolock.Version `json:"versions"`
}

// History lists a state's versions, newest first, the current one marked
// with "*": serial, when, what made it (source, actor, lock id) and what it
// changed (+added ~changed -removed instances). Its rejected commits are
// listed by Conflicts (kl history --rejected).
func (c *CLI) History(ctx context.Context, name string, opts kilolock.HistoryOptions) error {
	if opts.Limit < 0 || opts.Before < 0 {
		return &UsageError{Message: "--limit and --before take positive numbers", Hint: "e.g. kl history NAME --limit 20 --before 120"}
	}
	s, err := c.Backend.Status(ctx, name)
	if err != nil {
		return err
	}
	vs, err := c.Backend.History(ctx, name, opts)
	if err != nil {
		return err
	}
	current := statusVersion(s)
	if c.JSON {
		return c.writeJSON(HistoryJSON{State: s.Name, Current: current, Versions: vs})
	}
	if len(vs) == 0 {
		if opts.Before > 0 {
			_, err := fmt.Fprintf(c.Out, "state %s has no version before %d\n", s.Name, opts.Before)
			return err
		}
		_, err := fmt.Fprintf(c.Out, "state %s has no version yet\n", s.Name)
		return err
	}
	w := c.table()
	row(w, "VERSION", "SERIAL", "CREATED", "SOURCE", "ACTOR", "LOCK ID", "CHANGES")
	for _, v := range vs {
		number := strconv.FormatInt(v.Number, 10)
		if v.Number == current {
			number = "*" + number
		}
		row(w, number, strconv.FormatUint(v.Serial, 10), formatTime(v.Created), sourceText(&v),
			orDash(v.Actor), orDash(v.LockID), fmt.Sprintf("+%d ~%d -%d", v.Added, v.Changed, v.Removed))
	}
	return w.Flush()
}

// sourceText says what made a version; a merge names the serial its
// writer's lock read, from which its changes were merged.
func sourceText(v *kilolock.Version) string {
	if v.Source == kilolock.SourceMerge {
		return fmt.Sprintf("merge (base %d)", v.BaseSerial)
	}
	return orDash(string(v.Source))
}

package klcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
)

// ConflictsCmd is kl conflicts.
type ConflictsCmd struct {
	JSONFlag
	Name  string `arg:"" help:"State name." predictor:"state"`
	Limit int    `help:"Show at most N rejected commits." default:"20" placeholder:"N"`
}

// Run runs the command.
func (c *ConflictsCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Conflicts(ctx, c.Name, c.Limit) })
}

// ConflictsJSON is the JSON output of Conflicts, as the server's API
// answers it.
type ConflictsJSON struct {
	State      string               `json:"state"`
	Rejections []kilolock.Rejection `json:"rejections"`
}

// maxConflictsLimit is the most rejections one command lists, as the
// server's API allows.
const maxConflictsLimit = 1000

// maxShownAddresses bounds the addresses listed per rejection in the human
// output; --json lists them all.
const maxShownAddresses = 20

// Conflicts lists a state's rejected commits, newest first, at most limit
// (0 means 50): when, who (actor and lock id), why (reason), the addresses
// in conflict, the serials (what the writer's lock read, what the state was
// at), who got there first and what to do next. Terraform shows only "HTTP
// error: 409" for a rejected commit; this is the rest of the story.
func (c *CLI) Conflicts(ctx context.Context, name string, limit int) error {
	if limit < 0 || limit > maxConflictsLimit {
		return &UsageError{Message: fmt.Sprintf("--limit takes a number from 1 to %d", maxConflictsLimit), Hint: "e.g. kl conflicts NAME --limit 20"}
	}
	l, err := c.api().Rejections(ctx, name, limit)
	if err != nil {
		return err
	}
	rs := nonNil(l.Rejections)
	return c.show(ConflictsJSON{State: name, Rejections: rs}, func() error {
		if len(rs) == 0 {
			_, err := fmt.Fprintf(c.Out, "state %s has no rejected commits\n", name)
			return err
		}
		fmt.Fprintf(c.Out, "state %s: %s, newest first\n", name, plural(len(rs), "rejected commit", "rejected commits"))
		for _, r := range rs {
			fmt.Fprintln(c.Out)
			if err := c.writeRejection(&r); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeRejection writes one rejection as a block of labelled lines.
func (c *CLI) writeRejection(r *kilolock.Rejection) error {
	fmt.Fprintf(c.Out, "%s  %s\n", formatTime(r.Created), reasonText(r))
	w := c.table()
	row(w, "  by:", fmt.Sprintf("%s (lock id %s)", orDash(r.Actor), orDash(r.LockID)))
	if len(r.Addresses) > 0 {
		row(w, "  addresses:", addressList(r.Addresses))
	}
	row(w, "  serials:", fmt.Sprintf("base %d (what the lock read), latest %d", r.BaseSerial, r.LatestSerial))
	if v := r.Winner; v != nil {
		row(w, "  winner:", fmt.Sprintf("%s (lock id %s, version %d)", orDash(v.Actor), orDash(v.LockID), v.Version))
	} else {
		row(w, "  winner:", "-")
	}
	if r.Hint != "" {
		row(w, "  hint:", cell(r.Hint))
	}
	return w.Flush()
}

// reasonText says what a rejection's reason code means.
func reasonText(r *kilolock.Rejection) string {
	switch r.Reason {
	case kilolock.ReasonWriteConflict:
		if len(r.Addresses) == 0 {
			// Only an encrypted write, or one over an encrypted
			// version, conflicts without naming addresses.
			return "conflict: another writer committed first, and client-side encrypted writes cannot be merged"
		}
		return "conflict: another writer changed the same addresses first"
	case kilolock.ReasonClientEncryptionRequired:
		return "client_encryption_required: a plaintext write to a state that requires client-side encryption"
	case kilolock.ReasonStaleSerial:
		return "stale_serial: the write was older than the stored state"
	case kilolock.ReasonLineage:
		return "lineage_mismatch: the write came from another lineage"
	}
	return orDash(r.Reason)
}

// addressList joins addresses for one line, the first maxShownAddresses of
// them.
func addressList(as []string) string {
	shown := make([]string, 0, min(len(as), maxShownAddresses))
	for _, a := range as[:min(len(as), maxShownAddresses)] {
		shown = append(shown, cell(a))
	}
	s := strings.Join(shown, ", ")
	if n := len(as) - maxShownAddresses; n > 0 {
		s += fmt.Sprintf(" and %d more (--json lists them all)", n)
	}
	return s
}

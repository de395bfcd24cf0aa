package klcli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// HistoryCmd is kl history.
type HistoryCmd struct {
	stateArg
	Limit    int    `help:"Show at most N versions." default:"20" placeholder:"N"`
	Before   int64  `help:"Show only versions numbered below M (for paging)." placeholder:"M"`
	Rejected bool   `help:"List the rejected commits instead (as kl conflicts does)."`
	Address  string `help:"List the versions that added, changed or removed this instance or resource, with what changed." placeholder:"ADDR"`
}

// Run runs the command.
func (c *HistoryCmd) Run(ctx context.Context, g *Globals) error {
	if c.Rejected && c.Before != 0 {
		return &UsageError{Message: "--before pages versions, not rejected commits", Hint: "use kl history NAME --rejected --limit N"}
	}
	if c.Address != "" && (c.Rejected || c.Before != 0) {
		return &UsageError{Message: "--address lists every change of one address; it takes neither --rejected nor --before", Hint: "use kl history NAME --address ADDR"}
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error {
		switch {
		case c.Rejected:
			return cli.Conflicts(ctx, c.Name, c.Limit)
		case c.Address != "":
			return cli.AddressHistory(ctx, c.Name, c.Address)
		}
		return cli.History(ctx, c.Name, kilolock.HistoryOptions{Limit: c.Limit, Before: c.Before})
	})
}

// HistoryJSON is the JSON output of History.
type HistoryJSON struct {
	State string `json:"state"`
	// Current is the state's current version number, 0 before the first
	// write.
	Current  int64              `json:"current_version"`
	Versions []kilolock.Version `json:"versions"`
	// Pruned are the runs of pruned versions among (or, on the last page,
	// below) the versions listed, newest first.
	Pruned []kilolock.PrunedRange `json:"pruned,omitempty"`
	// Moves are the moves between states the state took part in, when a
	// listed version is one (source move): each names the other side.
	Moves []history.MoveRecord `json:"moves,omitempty"`
}

// History lists a state's versions, newest first, the current one marked
// with "*": serial, when, what made it (source, actor, lock id) and what it
// changed (+added ~changed -removed instances). Its rejected commits are
// listed by Conflicts (kl history --rejected).
func (c *CLI) History(ctx context.Context, name string, opts kilolock.HistoryOptions) error {
	if opts.Limit < 0 || opts.Before < 0 {
		return &UsageError{Message: "--limit and --before take positive numbers", Hint: "e.g. kl history NAME --limit 20 --before 120"}
	}
	l, err := c.api().History(ctx, name, client.HistoryOptions{Limit: opts.Limit, Before: opts.Before})
	if err != nil {
		return err
	}
	vs, current := nonNil(l.Versions), l.Current
	pl, err := c.api().Pruned(ctx, name, opts.Before, maxHistoryPruned)
	if err != nil {
		return err
	}
	pruned := history.PrunedOnPage(pl.Pruned, vs, opts)
	notes, moves, err := c.moveNotes(ctx, name, vs)
	if err != nil {
		return err
	}
	return c.show(HistoryJSON{State: name, Current: current, Versions: vs, Pruned: pruned, Moves: moves}, func() error {
		if len(vs) == 0 && len(pruned) == 0 {
			if opts.Before > 0 {
				return c.printf("state %s has no version before %d\n", name, opts.Before)
			}
			return c.printf("state %s has no version yet\n", name)
		}
		w := c.table()
		row(w, "VERSION", "SERIAL", "CREATED", "SOURCE", "ACTOR", "LOCK ID", "CHANGES")
		for _, v := range vs {
			for len(pruned) > 0 && pruned[0].From > v.Number {
				prunedRow(w, pruned[0])
				pruned = pruned[1:]
			}
			number := strconv.FormatInt(v.Number, 10)
			if v.Number == current {
				number = "*" + number
			}
			changes := v.ChangesText()
			if n := notes[v.Number]; n != "" {
				changes += " (" + n + ")"
			}
			row(w, number, strconv.FormatUint(v.Serial, 10), formatTime(v.Created), orDash(v.SourceText()),
				orDash(v.Actor), orDash(v.LockID), changes)
		}
		for _, p := range pruned {
			prunedRow(w, p)
		}
		return w.Flush()
	})
}

// prunedRow is the marker kl history shows where retention pruned a run
// of versions.
func prunedRow(w io.Writer, p kilolock.PrunedRange) {
	number := strconv.FormatInt(p.From, 10)
	if p.To > p.From {
		number += "-" + strconv.FormatInt(p.To, 10)
	}
	row(w, number, "-", formatTime(p.PrunedAt), "pruned", orDash(p.PrunedBy), "-", p.Policy)
}

// maxHistoryPruned bounds the runs of pruned versions one page of kl
// history asks for.
const maxHistoryPruned = 500

// ConflictsCmd is kl conflicts.
type ConflictsCmd struct {
	stateArg
	Limit int `help:"Show at most N rejected commits." default:"20" placeholder:"N"`
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
			return c.printf("state %s has no rejected commits\n", name)
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
	fmt.Fprintf(c.Out, "%s  %s\n", formatTime(r.Created), orDash(r.Explain()))
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

// TagCmds are kl tag set, list and unset.
type TagCmds struct {
	Set struct {
		stateArg
		Tag         string `arg:"" help:"Tag name: letters, digits, '.', '-', '_' (not latest, @N, serial:S or a number)."`
		Ref         string `arg:"" optional:"" help:"The version it names (set again to move it): ${version_ref}"`
		Description string `help:"What the version is, for people." placeholder:"TEXT"`
	} `cmd:"" help:"Name a version: kl tag set NAME TAG REF; the tag is then a version reference (kl rollback NAME --to TAG)." example:"kl tag set prod pre-migration @12 --description \"before the VPC move\""`
	List struct {
		stateArg
	} `cmd:"" help:"List a state's tags and the versions they name." example:"kl tag list prod"`
	Unset struct {
		Name string `arg:"" help:"State name." predictor:"state"`
		Tag  string `arg:"" help:"Tag name."`
	} `cmd:"" help:"Remove a tag; the version stays." example:"kl tag unset prod pre-migration"`
}

// Run runs the subcommand.
func (c *TagCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "set":
		a := &c.Set
		ref, err := refArg(a.Ref)
		if err != nil {
			return err
		}
		if err := kilolock.ValidTagName(a.Tag); err != nil {
			return err
		}
		return said(ctx, g, a.JSON, func(api *client.Client) (*history.Tag, error) {
			return api.SetTag(ctx, a.Name, a.Tag, client.TagRequest{Ref: ref.String(), Description: a.Description})
		}, func(t *history.Tag) (any, string) {
			return t, fmt.Sprintf("tag %s names @%d of state %s\n", t.Name, t.Version, a.Name)
		})
	case "list":
		return g.with(ctx, c.List.JSON, func(cli *CLI) error {
			l, err := cli.api().Tags(ctx, c.List.Name)
			if err != nil {
				return err
			}
			tags := nonNil(l.Tags)
			return cli.show(map[string]any{"tags": tags}, func() error {
				return writeTable(cli, tags, []string{"TAG", "VERSION", "SET", "BY", "DESCRIPTION"}, func(t history.Tag) []string {
					return []string{cell(t.Name), "@" + strconv.FormatInt(t.Version, 10), formatTime(t.Created), orDash(t.Actor), orDash(t.Description)}
				})
			})
		})
	case "unset":
		a := &c.Unset
		return said(ctx, g, false, func(api *client.Client) (*client.OK, error) { return api.DeleteTag(ctx, a.Name, a.Tag) },
			func(*client.OK) (any, string) { return nil, fmt.Sprintf("tag %s of state %s removed\n", a.Tag, a.Name) })
	}
	return unknownCommand(k)
}

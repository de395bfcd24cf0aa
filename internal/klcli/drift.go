package klcli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/drift"
)

// maxShownChanges bounds the attribute paths kl drift list shows per
// instance; --json has all of them.
const maxShownChanges = 5

// DriftList shows a state's open drift: per instance what differs, with
// the recorded and the real value, against which version, when, by whom.
func (c *CLI) DriftList(ctx context.Context, name string) error {
	l, err := c.api().Drift(ctx, name)
	if err != nil {
		return err
	}
	ds := nonNil(l.Drift)
	return c.show(map[string]any{"drift": ds}, func() error {
		return c.driftTable(ds)
	})
}

func (c *CLI) driftTable(ds []drift.DriftRecord) error {
	w := c.table()
	row(w, "ADDRESS", "DRIFT", "VERSION", "CHECKED", "BY")
	for _, d := range ds {
		what := "gone: the real object no longer exists"
		if d.Kind == drift.DriftChanged {
			var parts []string
			for i, ch := range d.Changes {
				if i == maxShownChanges {
					parts = append(parts, fmt.Sprintf("(and %d more)", len(d.Changes)-i))
					break
				}
				parts = append(parts, ch.Path+": "+driftValue(ch.Recorded, ch.Kind != "added")+" → "+driftValue(ch.Real, ch.Kind != "removed"))
			}
			what = strings.Join(parts, "; ")
			if what == "" {
				what = "changed"
			}
		}
		row(w, cell(d.Address), cell(what), "@"+strconv.FormatInt(d.Version, 10), formatTime(d.Checked), orDash(d.Actor))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(c.Out, "(%s)\n", plural(len(ds), "drifted instance", "drifted instances"))
	return err
}

// driftValue shows one side of a drifted path; present false is a side
// that has no value there.
func driftValue(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	return formatValue(v)
}

// DriftCmds are kl drift check and kl drift list.
type DriftCmds struct {
	Check DriftCheckCmd `cmd:"" help:"Run the CLI's refresh-only plan in DIR and record what drifted, per instance and attribute (sensitive values masked); writes no version unless --accept."`
	List  DriftListCmd  `cmd:"" help:"List a state's open drift: what differs from the real infrastructure, against which version, when, by whom."`
}

// DriftListCmd is kl drift list.
type DriftListCmd struct {
	JSONFlag
	Name string `arg:"" help:"State name." predictor:"state"`
}

// Run runs the command.
func (c *DriftListCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.DriftList(ctx, c.Name) })
}

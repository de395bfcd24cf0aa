package klcli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
)

// moveNotes are what kl history says of name's versions a move made, by
// version number: "3 instance(s) to b @7", "3 instance(s) from a @9".
func (c *CLI) moveNotes(ctx context.Context, name string, vs []kilolock.Version) (map[int64]string, []history.MoveRecord, error) {
	if !slices.ContainsFunc(vs, func(v kilolock.Version) bool { return v.Source == kilolock.SourceMove }) {
		return nil, nil, nil
	}
	l, err := c.api().Moves(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	recs := l.Moves
	notes := map[int64]string{}
	for _, m := range recs {
		if m.From == name {
			notes[m.FromVersion] = fmt.Sprintf("%d instance(s) to %s @%d", m.Instances, m.To, m.ToVersion)
		}
		if m.To == name {
			notes[m.ToVersion] = fmt.Sprintf("%d instance(s) from %s @%d", m.Instances, m.From, m.FromVersion)
		}
	}
	return notes, recs, nil
}

// MoveStates runs a move between states and prints what moved, the edges
// it makes cross the states, and what each configuration must do.
func (c *CLI) MoveStates(ctx context.Context, req httpbackend.MoveRequest) error {
	res, err := c.api().Move(ctx, req)
	if err != nil {
		return err
	}
	return c.show(res, func() error {
		var b strings.Builder
		verb := map[string]string{history.OperationMove: "Moved", history.OperationSplit: "Split", history.OperationMerge: "Merged"}[res.Operation]
		if res.DryRun {
			verb = "Would move"
		}
		fmt.Fprintf(&b, "%s %d instance(s) from %s to %s:\n", verb, len(res.Moved), res.From, res.To)
		for _, mv := range res.Moved {
			if mv.From == mv.To {
				fmt.Fprintf(&b, "  %s\n", cell(mv.From))
			} else {
				fmt.Fprintf(&b, "  %s -> %s\n", cell(mv.From), cell(mv.To))
			}
		}
		if len(res.Edges) > 0 {
			b.WriteString("Dependencies that will cross the two states:\n")
			for _, e := range res.Edges {
				switch e.Kind {
				case history.EdgeLeftOnMoved:
					fmt.Fprintf(&b, "  %s (stays in %s) depends on %s (moves)\n", cell(e.From), res.From, cell(e.To))
				case history.EdgeMovedOnLeft:
					fmt.Fprintf(&b, "  %s (moves) depends on %s (stays in %s)\n", cell(e.From), cell(e.To), res.From)
				default:
					fmt.Fprintf(&b, "  %s of %s holds a value of %s (moves): it likely reads it\n", cell(e.From), res.From, cell(e.To))
				}
			}
		}
		if v := res.Versions; !res.DryRun && v != nil {
			fmt.Fprintf(&b, "Written in one transaction: %s @%d (source move: %d instance(s) to %s @%d) and %s @%d (%d instance(s) from %s @%d).\n",
				res.From, v.From.Number, len(res.Moved), res.To, v.To.Number, res.To, v.To.Number, len(res.Moved), res.From, v.From.Number)
			if res.Archived {
				fmt.Fprintf(&b, "State %s is archived (not deleted): its history stays readable.\n", res.From)
			}
		}
		b.WriteString("What the configurations must do:\n")
		for i, s := range res.Config {
			fmt.Fprintf(&b, "  %d. %s\n", i+1, s)
		}
		if res.DryRun {
			writeDryRunEnd(&b, withoutDryRun)
		}
		_, err = fmt.Fprint(c.Out, b.String())
		return err
	})
}

// StateSplitCmd is kl state split.
type StateSplitCmd struct {
	JSONFlag
	Name    string   `arg:"" help:"State to split." predictor:"state"`
	ToState string   `required:"" name:"to-state" help:"The new state, in the same environment: its own lineage, the source's lock mode and quota." placeholder:"NEW"`
	Address []string `required:"" sep:"none" help:"Address to move into the new state (repeat the flag for more): an instance, a resource or a module." placeholder:"ADDR"`
	DryRun  bool     `help:"Show what would move and the dependencies that would cross the states; write nothing."`
}

// Run runs the command.
func (c *StateSplitCmd) Run(ctx context.Context, g *Globals) error {
	req := httpbackend.MoveRequest{Operation: history.OperationSplit, From: c.Name, To: c.ToState, DryRun: c.DryRun}
	for _, a := range c.Address {
		req.Addresses = append(req.Addresses, history.MovePair{From: a})
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.MoveStates(ctx, req) })
}

// StateMergeCmd is kl state merge.
type StateMergeCmd struct {
	JSONFlag
	Name   string `arg:"" help:"State whose instances all move; it is then archived." predictor:"state"`
	Into   string `required:"" help:"State that receives them." placeholder:"TO"`
	DryRun bool   `help:"Show what would move; write nothing."`
}

// Run runs the command.
func (c *StateMergeCmd) Run(ctx context.Context, g *Globals) error {
	req := httpbackend.MoveRequest{Operation: history.OperationMerge, From: c.Name, To: c.Into, DryRun: c.DryRun}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.MoveStates(ctx, req) })
}

// moveToState runs kl state mv --to-state: --to renames on the way.
func (c *StateMvCmd) moveToState(ctx context.Context, g *Globals, src, dst string) error {
	req := httpbackend.MoveRequest{Operation: history.OperationMove, From: c.Name, To: c.ToState, DryRun: c.DryRun,
		Addresses: []history.MovePair{{From: src, To: dst}}}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.MoveStates(ctx, req) })
}

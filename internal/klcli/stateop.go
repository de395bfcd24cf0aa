package klcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// StateListCmd is kl state list.
type StateListCmd struct {
	JSONFlag
	Name    string `arg:"" help:"State name." predictor:"state"`
	Pattern string `arg:"" optional:"" help:"Only addresses matching this: a prefix (module.demo, aws_instance.web) or a pattern with *."`
}

// Run runs the command.
func (c *StateListCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateList(ctx, c.Name, c.Pattern) })
}

// StateShowCmd is kl state show.
type StateShowCmd struct {
	JSONFlag
	Name    string `arg:"" help:"State name." predictor:"state"`
	Address string `arg:"" help:"Instance address."`
}

// Run runs the command.
func (c *StateShowCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateShow(ctx, c.Name, c.Address) })
}

// StateRmCmd is kl state rm NAME ADDR…, as tofu state rm takes them;
// --address is the older spelling, kept.
type StateRmCmd struct {
	JSONFlag
	Name      string   `arg:"" help:"State name." predictor:"state"`
	Addresses []string `arg:"" optional:"" name:"address" help:"Addresses to remove: instances, resources or modules."`
	Address   []string `name:"address" sep:"none" help:"An address to remove (repeat the flag for more); the same as the arguments." placeholder:"ADDR"`
	DryRun    bool     `help:"Show what would be removed; write nothing."`
}

// Run runs the command.
func (c *StateRmCmd) Run(ctx context.Context, g *Globals) error {
	addrs := append(append([]string(nil), c.Addresses...), c.Address...)
	if len(addrs) == 0 {
		return &UsageError{Message: "no address to remove", Hint: "kl state rm NAME ADDR… (kl state rm prod aws_instance.old --dry-run)"}
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateRm(ctx, c.Name, addrs, c.DryRun) })
}

// StateMvCmd is kl state mv NAME SRC DST, as tofu state mv takes them;
// --from and --to are the older spelling, kept as deprecated aliases.
type StateMvCmd struct {
	JSONFlag
	Name    string `arg:"" help:"State name." predictor:"state"`
	Src     string `arg:"" optional:"" help:"Address to move: an instance or a resource (with --to-state, a module too)."`
	Dst     string `arg:"" optional:"" help:"Its new address, e.g. module.demo.aws_instance.web (with --to-state it defaults to SRC)."`
	From    string `hidden:"" help:"Deprecated: the address to move, now the second argument." placeholder:"ADDR"`
	To      string `hidden:"" help:"Deprecated: the new address, now the third argument." placeholder:"ADDR"`
	ToState string `name:"to-state" help:"Move into this other state, in one transaction with the source." placeholder:"OTHER"`
	DryRun  bool   `help:"Show the move; write nothing."`
}

// Run runs the command.
func (c *StateMvCmd) Run(ctx context.Context, g *Globals) error {
	usage := "kl state mv NAME SRC DST, or kl state mv NAME SRC [DST] --to-state OTHER"
	src, err := oneOf("the address to move", c.Src, c.From, "--from", usage)
	if err != nil {
		return err
	}
	if c.From != "" || c.To != "" {
		fmt.Fprintf(g.stderr(), "kl: warning: --from and --to of kl state mv are deprecated; give the addresses as arguments: %s\n", usage)
	}
	if c.ToState != "" {
		dst := c.Dst
		if dst == "" {
			dst = c.To
		}
		return c.moveToState(ctx, g, src, dst)
	}
	dst, err := oneOf("the new address", c.Dst, c.To, "--to", usage)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.StateMv(ctx, c.Name, src, dst, c.DryRun) })
}

// StateList prints the addresses of the current version's instances that
// match pattern, one a line, as `tofu state list` does.
func (c *CLI) StateList(ctx context.Context, name, pattern string) error {
	l, err := c.api().StateList(ctx, name, pattern)
	if err != nil {
		return err
	}
	list := nonNil(l.Instances)
	return c.show(map[string]any{"state": name, "instances": list}, func() error {
		var b strings.Builder
		for _, in := range list {
			b.WriteString(cell(in.ID))
			b.WriteByte('\n')
		}
		_, err = fmt.Fprint(c.Out, b.String())
		return err
	})
}

// StateShow prints one instance of the current version.
func (c *CLI) StateShow(ctx context.Context, name, address string) error {
	return c.showInstance(ctx, name, kilolock.Latest, address)
}

// StateRm removes instances, resources or modules from a state as a new
// version (source state-op); dryRun only shows what would go.
func (c *CLI) StateRm(ctx context.Context, name string, addresses []string, dryRun bool) error {
	if len(addresses) == 0 {
		return &UsageError{Message: "kl state rm needs at least one address", Hint: "e.g. kl state rm NAME aws_instance.web"}
	}
	res, err := c.api().StateRm(ctx, name, client.StateRmRequest{Addresses: addresses, DryRun: dryRun})
	if err != nil {
		return err
	}
	return c.writeStateOp(res)
}

// StateMv moves an instance or resource to another address as a new
// version (source state-op); dryRun only shows the move.
func (c *CLI) StateMv(ctx context.Context, name, from, to string, dryRun bool) error {
	res, err := c.api().StateMv(ctx, name, client.StateMvRequest{From: from, To: to, DryRun: dryRun})
	if err != nil {
		return err
	}
	return c.writeStateOp(res)
}

func (c *CLI) writeStateOp(res *history.StateOpResult) error {
	return c.show(res, func() error {
		p := &res.Plan
		verbs := diffVerbs
		if res.DryRun {
			verbs = planVerbs
		}
		fmt.Fprintf(c.Out, "%s on state %s, from %s:\n", p.Operation, p.State, versionText(&p.Base))
		writeChangeSet(c.Out, &p.ChangeSet, verbs)
		switch {
		case res.DryRun:
			writeDryRunEnd(c.Out, withoutDryRun)
		case res.Version == nil:
			fmt.Fprintln(c.Out, "Nothing changed: no version was written.")
		default:
			fmt.Fprintf(c.Out, "Written as version %s (source state-op).\n", versionText(res.Version))
		}
		return nil
	})
}

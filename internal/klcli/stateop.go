package klcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// StateList prints the addresses of the current version's instances that
// match pattern, one a line, as `tofu state list` does.
func (c *CLI) StateList(ctx context.Context, name, pattern string) error {
	list, err := c.Backend.StateList(ctx, name, pattern)
	if err != nil {
		return err
	}
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
	res, err := c.Backend.StateRm(ctx, name, addresses, dryRun)
	if err != nil {
		return err
	}
	return c.writeStateOp(res)
}

// StateMv moves an instance or resource to another address as a new
// version (source state-op); dryRun only shows the move.
func (c *CLI) StateMv(ctx context.Context, name, from, to string, dryRun bool) error {
	res, err := c.Backend.StateMv(ctx, name, from, to, dryRun)
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
			fmt.Fprintln(c.Out, "Dry run: nothing was written.")
		case res.Version == nil:
			fmt.Fprintln(c.Out, "Nothing changed: no version was written.")
		default:
			fmt.Fprintf(c.Out, "Written as version %s (source state-op).\n", versionText(res.Version))
		}
		return nil
	})
}

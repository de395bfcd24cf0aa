package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// StatePullCmd is kl state pull.
type StatePullCmd struct {
	Name    string   `arg:"" help:"State name." predictor:"state"`
	Ref     string   `arg:"" optional:"" help:"Version: ${version_ref}"`
	Version string   `help:"The version, as REF takes it (--version 3 is @3)." placeholder:"REF"`
	Address []string `sep:"none" help:"Pull a slice: only this instance or resource (repeat the flag for more) and its cone, with every output, the same lineage and serial." placeholder:"ADDR"`
	Cone    string   `help:"What the slice adds to the addresses: dependencies (what they rest on, the default), dependents (what rests on them) or none." placeholder:"CONE"`
}

// Run runs the command.
func (c *StatePullCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	if len(c.Address) == 0 {
		if c.Cone != "" {
			return &UsageError{Message: "--cone shapes a slice, and no --address was given", Hint: "use kl state pull NAME --address ADDR --cone " + c.Cone}
		}
		return g.with(ctx, false, func(cli *CLI) error { return cli.Pull(ctx, c.Name, ref) })
	}
	cone, err := history.ParseSliceCone(c.Cone)
	if err != nil {
		return err
	}
	return g.with(ctx, false, func(cli *CLI) error { return cli.PullSlice(ctx, c.Name, ref, c.Address, cone) })
}

// Pull writes one version of a state to Documents as the state document,
// exactly as served to terraform/tofu.
func (c *CLI) Pull(ctx context.Context, name string, ref kilolock.VersionRef) error {
	var number int64
	switch ref.Kind {
	case kilolock.RefNumber:
		number = int64(ref.N)
	case kilolock.RefLatest:
		s, err := c.api().Status(ctx, name)
		if err != nil {
			return err
		}
		if number = statusVersion(s); number == 0 {
			return fmt.Errorf("state %q has no version yet: %w", name, kilolock.ErrNotFound)
		}
	default: // a tag, a serial, @-K: the server resolves it
		v, err := c.api().Show(ctx, name, ref.String())
		if err != nil {
			return err
		}
		number = v.Version.Number
	}
	doc, err := readAll(c.api().StateVersion(transfer(ctx), name, number))
	if err != nil {
		return err
	}
	_, err = c.documents().Write(doc)
	return err
}

package klcli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/orchestrate"
)

// DriftCheckCmd is kl drift check.
type DriftCheckCmd struct {
	JSONFlag
	Dir     string   `arg:"" optional:"" help:"The configuration directory, initialized with its backend (tofu init); default: the current one." type:"path"`
	State   string   `help:"The state's name in KiloLock (default: read from DIR's backend address)." placeholder:"NAME"`
	Address []string `sep:"none" help:"Refresh only this instance or resource (repeat the flag for more), as -target does." placeholder:"ADDR"`
	Cone    bool     `help:"With --address: refresh the addresses and their dependency cone (what rests on them, from the stored graph), not the whole state."`
	Accept  bool     `help:"Write the refreshed state as a version (source refresh), as tofu apply of the refresh-only plan would; refused if the state moved since the plan read it."`
	TFBinFlag
	// Tofu is the name --tf-bin had before it was one name in every
	// command; KL_TOFU, its variable, is read in tfBin.
	Tofu string `hidden:"" help:"Deprecated: use --tf-bin (KL_TF_BIN)." placeholder:"PATH"`
}

// Run runs the command.
func (c *DriftCheckCmd) Run(ctx context.Context, g *Globals) error {
	if c.Cone && len(c.Address) == 0 {
		return &UsageError{Message: "--cone widens --address, and no --address was given", Hint: "use kl drift check DIR --address ADDR --cone, or no --cone to check the whole state"}
	}
	dir, err := configDir(c.Dir)
	if err != nil {
		return err
	}
	// The directory's initialized backend names the state and, unless
	// --server or --database is given, the server, as for kl plan.
	name, target := c.State, *g
	if name == "" || g.Server == "" && g.Database == "" {
		b, err := orchestrate.ReadTFBackend(dir)
		if err != nil && name == "" {
			return err
		}
		if err == nil {
			if name == "" {
				name = b.State
			}
			if g.Server == "" && g.Database == "" {
				target.Server = b.Server
			}
		}
	}
	bin := c.tfBin(g.stderr())
	return target.with(ctx, c.JSON, func(cli *CLI) error {
		return cli.DriftCheck(ctx, orchestrate.DriftCheckRequest{Dir: dir, State: name, Addresses: c.Address, Cone: c.Cone, Accept: c.Accept, CLI: bin, Log: g.cliOutput()})
	})
}

// tfBin is the CLI to run: --tf-bin (KL_TF_BIN), else the deprecated
// --tofu or KL_TOFU with a warning on warn. KL_TOFU beside KL_TF_BIN is
// ignored without a word: it is also the test harness's variable.
func (c *DriftCheckCmd) tfBin(warn io.Writer) string {
	old, name := c.Tofu, "--tofu"
	if old == "" {
		old, name = os.Getenv("KL_TOFU"), "KL_TOFU"
	}
	switch {
	case old == "" || c.TFBin != "" && name == "KL_TOFU":
		return c.TFBin
	case c.TFBin != "":
		fmt.Fprintf(warn, "kl: warning: --tofu is deprecated and ignored beside --tf-bin (KL_TF_BIN); %s runs\n", c.TFBin)
		return c.TFBin
	}
	fmt.Fprintf(warn, "kl: warning: %s is deprecated: use --tf-bin (KL_TF_BIN), as kl plan, apply and quota check do\n", name)
	return old
}

// DriftCheck runs orchestrate.DriftCheck over kl's client and prints its
// result.
func (c *CLI) DriftCheck(ctx context.Context, r orchestrate.DriftCheckRequest) error {
	res, err := orchestrate.DriftCheck(ctx, c.api(), r)
	if err != nil {
		return err
	}
	check, targets := res.Check, res.Targets
	return c.show(res, func() error {
		scope := "the whole state"
		if targets != nil {
			scope = plural(len(targets), "address", "addresses") + " (" + strings.Join(targets[:min(len(targets), 5)], ", ")
			if len(targets) > 5 {
				scope += ", …"
			}
			scope += ")"
		}
		fmt.Fprintf(c.Out, "checked @%d of %s, %s: %s\n", check.Version, r.State, scope, plural(len(check.Drifted), "instance drifted", "instances drifted"))
		if len(check.Drifted) > 0 {
			if err := c.driftTable(check.Drifted); err != nil {
				return err
			}
		}
		if res.Accepted != nil {
			_, err = fmt.Fprintf(c.Out, "accepted: @%d (serial %d, source refresh) holds what the real infrastructure holds\n", res.Accepted.Number, res.Accepted.Serial)
		} else if len(check.Drifted) > 0 && !r.Accept {
			_, err = fmt.Fprintf(c.Out, "nothing was written; kl drift check --accept writes the refreshed state as a version\n")
		}
		return err
	})
}

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
	if err := writeTable(c, ds, []string{"ADDRESS", "DRIFT", "VERSION", "CHECKED", "BY"}, func(d drift.DriftRecord) []string {
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
		return []string{cell(d.Address), cell(what), "@" + strconv.FormatInt(d.Version, 10), formatTime(d.Checked), orDash(d.Actor)}
	}); err != nil {
		return err
	}
	return c.printf("(%s)\n", plural(len(ds), "drifted instance", "drifted instances"))
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
	Check DriftCheckCmd `cmd:"" help:"Run the CLI's refresh-only plan in DIR and record what drifted, per instance and attribute (sensitive values masked); writes no version unless --accept." example:"kl drift check . --address aws_instance.web --cone"`
	List  DriftListCmd  `cmd:"" help:"List a state's open drift: what differs from the real infrastructure, against which version, when, by whom." example:"kl drift list prod"`
}

// DriftListCmd is kl drift list.
type DriftListCmd struct {
	stateArg
}

// Run runs the command.
func (c *DriftListCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.DriftList(ctx, c.Name) })
}

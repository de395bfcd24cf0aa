package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// RollbackCmds are kl rollback NAME and kl rollback resource.
type RollbackCmds struct {
	State    RollbackStateCmd    `cmd:"" default:"withargs" help:"Roll a whole state back; the word state may be left out. Example: kl rollback prod --to @3 (a dry run), then kl rollback prod --to @3 --apply --yes."`
	Resource RollbackResourceCmd `cmd:"" help:"Roll one instance, or a resource with all its instances, back; merged onto the current version. Example: kl rollback resource prod aws_instance.web --to pre-migration."`
}

// rollbackFlags are the flags every rollback takes.
type rollbackFlags struct {
	JSONFlag
	To     string `required:"" help:"The version to roll back to: ${version_ref}" placeholder:"REF"`
	Apply  bool   `help:"Append the rollback as a new version (needs --yes). Without it, a dry run that writes nothing."`
	Yes    bool   `help:"Confirm --apply."`
	DryRun bool   `name:"dry-run" help:"Show what the rollback would do; write nothing (the default of kl rollback; the flag every writing command takes)."`
}

func (f *rollbackFlags) run(ctx context.Context, g *Globals, name, address string) error {
	ref, err := refArg(f.To)
	if err != nil {
		return err
	}
	if f.Apply && f.DryRun {
		return &UsageError{Message: "--dry-run and --apply contradict each other", Hint: "drop --apply to preview, or --dry-run to write (with --yes)"}
	}
	if f.Apply && !f.Yes { // refused before anything is dialed
		return (&CLI{}).Rollback(ctx, name, client.RollbackRequest{Apply: true}, false)
	}
	return g.with(ctx, f.JSON, func(cli *CLI) error {
		return cli.Rollback(ctx, name, client.RollbackRequest{To: ref.String(), Address: address, Apply: f.Apply}, f.Yes)
	})
}

// RollbackStateCmd is kl rollback NAME --to REF.
type RollbackStateCmd struct {
	rollbackFlags
	Name string `arg:"" help:"State name." predictor:"state"`
}

// Run runs the command.
func (c *RollbackStateCmd) Run(ctx context.Context, g *Globals) error {
	return c.run(ctx, g, c.Name, "")
}

// RollbackResourceCmd is kl rollback resource NAME ADDR --to REF; the
// state and the address were flags before (--state, --address), kept as
// deprecated aliases.
type RollbackResourceCmd struct {
	rollbackFlags
	Name        string `arg:"" optional:"" help:"State name." predictor:"state"`
	Addr        string `arg:"" optional:"" name:"address" help:"An instance (aws_instance.web[0]) or a resource with all its instances (aws_instance.web)."`
	StateFlag   string `name:"state" hidden:"" help:"Deprecated: the state name, now the first argument." placeholder:"NAME" predictor:"state"`
	AddressFlag string `name:"address" hidden:"" help:"Deprecated: the address, now the second argument." placeholder:"ADDR"`
}

// Run runs the command.
func (c *RollbackResourceCmd) Run(ctx context.Context, g *Globals) error {
	const usage = "kl rollback resource NAME ADDR --to REF"
	name, err := oneOf("the state name", c.Name, c.StateFlag, "--state", usage)
	if err != nil {
		return err
	}
	addr, err := oneOf("the address", c.Addr, c.AddressFlag, "--address", usage)
	if err != nil {
		return err
	}
	if c.StateFlag != "" || c.AddressFlag != "" {
		fmt.Fprintf(g.stderr(), "kl: warning: --state and --address of kl rollback resource are deprecated; use kl rollback resource %s %s --to %s\n", name, addr, c.To)
	}
	return c.run(ctx, g, name, addr)
}

// oneOf is a value given as an argument or with its deprecated flag, not
// both unless they agree, and not neither.
func oneOf(what, arg, flag, flagName, usage string) (string, error) {
	switch {
	case arg != "" && flag != "" && arg != flag:
		return "", &UsageError{Message: fmt.Sprintf("%s given twice: %s and %s %s", what, arg, flagName, flag), Hint: "give it once, as an argument: " + usage}
	case arg == "" && flag == "":
		return "", &UsageError{Message: "missing " + what, Hint: usage}
	case arg == "":
		return flag, nil
	}
	return arg, nil
}

// Rollback rolls a state — or, with r.Address, one instance or resource —
// back to version r.To. Without r.Apply it is a dry run: it prints what
// would be added back, removed and changed. It always prints the warning
// that rolling back state does not roll back infrastructure. Applying
// needs yes as well: --apply without --yes is a *UsageError.
func (c *CLI) Rollback(ctx context.Context, name string, r client.RollbackRequest, yes bool) error {
	if r.Apply && !yes {
		return &UsageError{
			Message: "kl rollback --apply changes the state and needs --yes as well",
			Hint:    "run the dry run first (without --apply), read the warning, then add --apply --yes",
		}
	}
	out, err := c.api().Rollback(ctx, name, r)
	if err != nil {
		return err
	}
	res := &out.RollbackResult
	return c.show(struct {
		*history.RollbackResult
		DryRun bool `json:"dry_run"`
	}{res, !r.Apply}, func() error {
		p := &res.Plan
		what := "state " + name
		if p.Address != "" {
			what = fmt.Sprintf("%s in state %s", p.Address, name)
		}
		mode := "dry run"
		if r.Apply {
			mode = "applied"
		}
		fmt.Fprintf(c.Out, "Rollback of %s to %s from the current %s (%s):\n\n", what, versionText(&p.Target), versionText(&p.Base), mode)
		if p.Opaque {
			fmt.Fprintf(c.Out, "  %s or %s is client-side encrypted: the whole of %s is restored as it was written; its resources cannot be listed.\n",
				versionText(&p.Target), versionText(&p.Base), versionText(&p.Target))
		} else {
			verbs := history.RollbackVerbs
			if r.Apply && res.Version != nil {
				verbs = history.RolledBackVerbs
			}
			p.ChangeSet.WriteText(c.Out, verbs)
		}
		warning := p.Warning
		if warning == "" {
			warning = history.RollbackWarning
		}
		fmt.Fprintf(c.Out, "\nWarning: %s\n\n", warning)
		switch {
		case !r.Apply:
			cmd := fmt.Sprintf("kl rollback %s --to %s", name, r.To)
			if r.Address != "" {
				cmd = fmt.Sprintf("kl rollback resource %s %s --to %s", name, r.Address, r.To)
			}
			writeDryRunEnd(c.Out, cmd+" --apply --yes (appends the rollback as a new version)")
		case res.Version == nil:
			fmt.Fprintf(c.Out, "The current version already has the content of %s: nothing was written.\n", versionText(&p.Target))
		default:
			fmt.Fprintf(c.Out, "Rolled back as new version %s (source rollback); %s stays in the history.\n", versionText(res.Version), versionText(&p.Base))
		}
		return nil
	})
}

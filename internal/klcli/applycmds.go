package klcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/orchestrate"
)

// TFBinFlag is --tf-bin (KL_TF_BIN): the one name, in every command that
// runs the IaC CLI, of the binary it runs.
type TFBinFlag struct {
	TFBin string `name:"tf-bin" env:"KL_TF_BIN" help:"The IaC CLI to run: a name in PATH or a path (default: tofu, else terraform, in PATH)." placeholder:"BIN"`
}

// tfFlags are the flags of the commands that run the IaC CLI.
type tfFlags struct {
	Files    []string `name:"file" short:"f" sep:"none" help:"Scope to the resource, data and module blocks this configuration file declares (repeatable)." placeholder:"FILE"`
	Targets  []string `name:"target" sep:"none" help:"Scope to this address, as -target does (repeatable)." placeholder:"ADDR"`
	Vars     []string `name:"var" sep:"none" help:"Set a variable, NAME=VALUE (repeatable)." placeholder:"NAME=VALUE"`
	VarFiles []string `name:"var-file" sep:"none" help:"Read variables from a file (repeatable)." placeholder:"FILE"`
	State    string   `help:"State name in the API (default: from the directory's initialized http backend)." placeholder:"NAME"`
	TFBinFlag
}

func (f *tfFlags) scope() orchestrate.Scope {
	return orchestrate.Scope{Files: f.Files, Targets: f.Targets}
}

// configDir is the configuration directory a command was given, the
// current one when none was: what an omitted [DIR] means everywhere.
func configDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", &UsageError{Message: fmt.Sprintf("%s is not a directory", dir), Hint: "name the configuration directory (where tofu init ran), or run kl in it"}
	}
	return dir, nil
}

// backend finds the server and state: the directory's initialized
// backend, with --server and --state overriding it.
func (f *tfFlags) backend(g *Globals, dir string) (*orchestrate.TFBackend, error) {
	b, err := orchestrate.ReadTFBackend(dir)
	if err != nil {
		if g.Server == "" || f.State == "" {
			return nil, err
		}
		return &orchestrate.TFBackend{Server: g.Server, State: f.State, Address: g.Server + "/v1/states/" + f.State}, nil
	}
	if g.Server != "" {
		b.Server = g.Server
	}
	if f.State != "" {
		b.State = f.State
	}
	return b, nil
}

// PlanCmd is kl plan.
type PlanCmd struct {
	tfFlags
	Dir string `arg:"" optional:"" help:"The configuration directory (default: the current one)." type:"path"`
	Out string `short:"o" default:"kl-plan.json" help:"Where to write the plan spec; the saved plan goes beside it (.tfplan)." placeholder:"SPEC"`
}

// Run runs the command.
func (c *PlanCmd) Run(ctx context.Context, g *Globals) error {
	dir, err := configDir(c.Dir)
	if err != nil {
		return err
	}
	var state, server string
	b, berr := c.backend(g, dir)
	if berr == nil {
		state, server = b.State, b.Server
	}
	spec, err := orchestrate.Plan(ctx, orchestrate.PlanRequest{
		Dir: dir, Scope: c.scope(), Vars: c.Vars, VarFiles: c.VarFiles,
		SpecPath: c.Out, TFBin: c.TFBin, State: state, Server: server, Actor: orchestrate.WhoAmI(g.Actor),
		Stdout: g.cliOutput(), Stderr: g.cliOutput(),
	})
	if err != nil {
		return err
	}
	out := g.out()
	fmt.Fprintf(out, "%s\n", spec.Summary())
	fmt.Fprintf(out, "plan spec: %s (plan file %s, source serial %d)\n", c.Out, filepath.Join(spec.Dir, spec.PlanFile), spec.Source.Serial)
	if berr != nil {
		return nil // no backend to ask: no admission
	}
	conn, err := g.admissionConn(ctx, b)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.admission(b.State, out, "").Check(ctx, spec.Quota)
}

// ApplyCmds are kl apply and kl apply abort.
type ApplyCmds struct {
	Run   ApplyCmd      `cmd:"" default:"withargs" help:"The default (kl apply [DIR] [flags] means kl apply run): apply within a scope; with --orchestrated, reserve first." example:"kl apply --orchestrated --plan-spec web.json"`
	Abort ApplyAbortCmd `cmd:"" help:"Abort an orchestrated apply: its reservations are released at once and its apply stops within seconds." example:"kl apply abort --state prod --latest"`
}

// Help is kl apply --help's long text: the exit codes.
func (c *ApplyCmds) Help() string {
	return `kl apply [DIR] runs the CLI's apply within a scope (-f FILE, --target ADDR,
or a --plan-spec from kl plan), as plain Terraform would. With --orchestrated it
plans, takes read and write reservations on what the plan touches (all at once,
waiting up to --wait-timeout while others hold them), plans again if the state
moved meanwhile, applies within the reservations through the backend, and
releases them. kl apply run --help lists the flags. kl prints its summary;
kl --verbose shows the CLI's output on stderr too.

kl apply abort stops a running orchestrated apply within seconds: its kl asks
for its run's status every second, interrupts the CLI and its provisioners
(SIGINT to its process group, SIGKILL 5 s later), and exits 7, saying whether
tofu saved what it could not write in errored.tfstate.

Exit codes: 0 applied (or nothing to apply); 1 error; 2 bad usage or input;
3 state or run not found; 4 conflict: the spec's reads/writes changed since its
plan, the plan writes outside its scope, or a write was refused; 5 server
unavailable; 6 blocked: gave up waiting for reservations; 7 aborted: the run
was aborted or its lease ran out, the apply was stopped or its write refused;
8 the CLI (tofu or terraform) failed; 130 interrupted (Ctrl-C, SIGTERM, or a
reader that went away: the CLI is stopped gracefully, the run released).`
}

// ApplyCmd is kl apply [DIR].
type ApplyCmd struct {
	tfFlags
	Dir          string        `arg:"" optional:"" help:"The configuration directory (default: the plan spec's, else the current one)." type:"path"`
	Orchestrated bool          `help:"Reserve what the plan touches before applying (see kl apply --help)."`
	PlanSpec     string        `name:"plan-spec" help:"Apply the plan spec kl plan wrote; refused when what it reads or writes changed since." placeholder:"SPEC" type:"path"`
	WaitTimeout  time.Duration `name:"wait-timeout" default:"2m" help:"How long to wait for reservations others hold; 0 fails at once."`
	Lease        time.Duration `default:"15m" help:"The run's lease, renewed every lease/3; a run that stops renewing frees its reservations when it runs out."`
}

// Run runs the command.
func (c *ApplyCmd) Run(ctx context.Context, g *Globals) error {
	if c.PlanSpec != "" && !c.scope().IsZero() {
		return &UsageError{Message: "--plan-spec sets the scope; it takes no -f or --target", Hint: "plan the scope you want with kl plan -f/--target, then apply that spec"}
	}
	if c.WaitTimeout < 0 {
		return &UsageError{Message: "--wait-timeout cannot be negative", Hint: "give 0 to fail at once, or a duration such as 2m"}
	}
	req := orchestrate.ApplyRequest{
		Scope: c.scope(), SpecPath: c.PlanSpec, Vars: c.Vars, VarFiles: c.VarFiles, TFBin: c.TFBin,
		Actor: g.Actor, Orchestrated: c.Orchestrated, WaitTimeout: c.WaitTimeout, Lease: c.Lease,
		Quiet: g.quiet(), Out: g.out(), Stderr: g.stderr(), CLIOutput: g.cliOutput(),
	}
	if c.Orchestrated && g.Database != "" {
		return &UsageError{Message: "an orchestrated apply runs through a kld server, not --database", Hint: "drop --database; kl finds the server in the initialized backend (or give --server)"}
	}
	dir := c.Dir
	if dir == "" && c.PlanSpec != "" {
		spec, err := readSpecDir(c.PlanSpec)
		if err != nil {
			return err
		}
		dir = spec
	}
	dir, err := configDir(dir)
	if err != nil {
		return err
	}
	req.Dir = dir
	b, err := c.backend(g, dir)
	if err != nil && c.Orchestrated {
		return err
	}
	if err == nil {
		// The directory's backend answers the plan's admission.
		conn, err := g.admissionConn(ctx, b)
		if err != nil {
			return err
		}
		defer conn.Close()
		adm := conn.admission(b.State, g.stderr(), "kl: ")
		adm.Quiet = g.quiet() // on stderr beside the apply: KL_LOG_LEVEL=warn hides what fits
		req.Admission = adm
	}
	if !c.Orchestrated {
		return orchestrate.Apply(ctx, req)
	}
	hb, err := NewConn(b.Server, HTTPOptions{Token: g.Token, Timeout: g.Timeout, Actor: orchestrate.WhoAmI(g.Actor)})
	if err != nil {
		return err
	}
	defer hb.Close()
	req.Backend, req.Runs = b, hb.api
	return orchestrate.Apply(ctx, req)
}

// readSpecDir returns the configuration directory a plan spec names.
func readSpecDir(path string) (string, error) {
	spec, err := orchestrate.ReadSpec(path)
	if err != nil {
		return "", err
	}
	return spec.Dir, nil
}

// ApplyAbortCmd is kl apply abort.
type ApplyAbortCmd struct {
	JSONFlag
	ApplyID string `name:"apply-id" help:"The apply run to abort (run_…, as kl status and the wait feedback show it)." placeholder:"ID"`
	State   string `help:"With --latest: the state whose newest run in flight is aborted." placeholder:"NAME"`
	Latest  bool   `help:"Abort the newest apply run in flight on --state."`
}

// Run runs the command.
func (c *ApplyAbortCmd) Run(ctx context.Context, g *Globals) error {
	switch {
	case c.ApplyID != "" && (c.Latest || c.State != ""):
		return &UsageError{Message: "--apply-id names the run; it takes neither --state nor --latest", Hint: "use kl apply abort --apply-id ID, or kl apply abort --state NAME --latest"}
	case c.ApplyID == "" && (!c.Latest || c.State == ""):
		return &UsageError{Message: "name the run to abort", Hint: "use kl apply abort --apply-id ID, or kl apply abort --state NAME --latest"}
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Abort(ctx, c.ApplyID, c.State) })
}

// Abort aborts apply run id, or the newest run in flight on state when id
// is empty. An ended run is a *kilolock.RunEndedError; no run in flight,
// ErrNotFound.
func (c *CLI) Abort(ctx context.Context, id, state string) error {
	if id == "" {
		l, err := c.api().Runs(ctx, state, client.RunsOptions{InFlight: true, Limit: 1})
		if err != nil {
			return err
		}
		runs := l.Runs
		if len(runs) == 0 {
			return withHint(fmt.Errorf("state %q has no apply run in flight: %w", state, kilolock.ErrNotFound), "`kl status "+state+"` lists the runs in flight; nothing was aborted")
		}
		id = runs[0].ID
	}
	run, err := c.api().AbortRun(ctx, id)
	var ended *kilolock.RunEndedError
	if errors.As(err, &ended) {
		return withHint(err, "only a waiting or active run can be aborted; this one is over and holds nothing")
	}
	if err != nil {
		return err
	}
	return c.show(run, func() error {
		fmt.Fprintf(c.Out, "aborted apply run %s on state %q (%s by %s); its reservations are released, and its kl stops the apply within seconds\n",
			run.ID, run.State, cell(run.Info), orDash(run.Actor))
		return nil
	})
}

package klcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
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
		b, err := ReadTFBackend(dir)
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
		return cli.DriftCheck(ctx, DriftCheckRequest{Dir: dir, State: name, Addresses: c.Address, Cone: c.Cone, Accept: c.Accept, CLI: bin, Log: g.cliOutput()})
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

// DriftCheckRequest is what kl drift check runs.
type DriftCheckRequest struct {
	Dir, State string
	Addresses  []string
	Cone       bool
	Accept     bool
	// CLI is the tofu or terraform binary ("" finds one in PATH); Log
	// gets its output (plan's, never show -json's), nil none.
	CLI string
	Log io.Writer
}

// DriftResult is kl drift check's answer: the check recorded, and the
// version --accept wrote (nil for none).
type DriftResult struct {
	Check    *drift.DriftCheck `json:"check"`
	Targets  []string          `json:"targets,omitempty"`
	Accepted *kilolock.Version `json:"accepted,omitempty"`
}

// DriftCheck runs the real CLI's refresh-only plan (plan -refresh-only
// -out, then show -json) in r.Dir, targeted at r.Addresses and, with
// r.Cone, at what rests on them in the stored graph; it records what
// drifted with the backend against the serial the plan read, and with
// r.Accept writes the plan's refreshed state as a version of source
// refresh.
func (c *CLI) DriftCheck(ctx context.Context, r DriftCheckRequest) error {
	targets := r.Addresses
	if r.Cone {
		v, err := c.api().Cone(ctx, r.State, r.Addresses, client.ConeOptions{Direction: history.Dependents})
		if err != nil {
			return err
		}
		targets = make([]string, 0, len(v.Nodes))
		seen := map[string]bool{}
		for _, n := range v.Nodes {
			if !seen[n.Address] {
				seen[n.Address] = true
				targets = append(targets, n.Address)
			}
		}
	}
	plan, refreshed, err := refreshOnlyPlan(ctx, r, targets)
	if err != nil {
		return err
	}
	report, err := driftReport(plan, refreshed)
	if err != nil {
		return err
	}
	report.Scope = targets
	check, err := c.api().RecordDrift(ctx, r.State, report)
	if err != nil {
		return err
	}
	res := DriftResult{Check: check, Targets: targets}
	if r.Accept && len(check.Drifted) > 0 {
		a, err := c.api().AcceptRefresh(ctx, r.State, refreshed)
		if err != nil {
			return fmt.Errorf("drift recorded (check %d), but accepting the refresh failed: %w", check.ID, err)
		}
		res.Accepted = a.Version
	}
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

// refreshOnlyPlan runs plan -refresh-only -out in r.Dir and reads the
// plan back with show -json, and the refreshed state the plan holds.
func refreshOnlyPlan(ctx context.Context, r DriftCheckRequest, targets []string) (*tfjson.Plan, []byte, error) {
	log := r.Log
	if log == nil {
		log = io.Discard
	}
	tf, err := newTF(ctx, r.Dir, r.CLI, log, log, nil)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "kl-drift-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	planFile := filepath.Join(tmp, "refresh.tfplan")
	opts := []tfexec.PlanOption{tfexec.RefreshOnly(true), tfexec.Out(planFile)}
	for _, t := range targets {
		opts = append(opts, tfexec.Target(t))
	}
	if _, err := tf.Plan(ctx, opts...); err != nil {
		return nil, nil, withHint(cliError("drift check: plan -refresh-only", err), "run tofu init in "+r.Dir+" first if it never ran there; kl --verbose drift check shows the CLI's output")
	}
	tf.SetStdout(io.Discard) // show -json is read, not shown
	plan, err := tf.ShowPlanFile(ctx, planFile)
	if err != nil {
		return nil, nil, cliError("drift check: show -json", err)
	}
	refreshed, err := planState(planFile)
	if err != nil {
		return nil, nil, err
	}
	return plan, refreshed, nil
}

// planState reads the refreshed state a saved plan holds (its tfstate
// entry): what applying the plan writes, with the serial it read.
func planState(planFile string) ([]byte, error) {
	data, ok, err := planStateEntry(planFile)
	switch {
	case err != nil:
		return nil, fmt.Errorf("drift check: %w", err)
	case !ok:
		return nil, errors.New("drift check: the plan file holds no state (tfstate)")
	}
	return data, nil
}

// driftReport turns a refresh-only plan's resource_drift into a report
// against the serial and lineage of the state the plan read.
func driftReport(plan *tfjson.Plan, refreshed []byte) (*drift.DriftReport, error) {
	var head struct {
		Serial  uint64 `json:"serial"`
		Lineage string `json:"lineage"`
	}
	if err := json.Unmarshal(refreshed, &head); err != nil {
		return nil, fmt.Errorf("drift check: the plan's state: %w", err)
	}
	r := &drift.DriftReport{Serial: head.Serial, Lineage: head.Lineage, Drifted: []drift.DriftedInstance{}}
	for _, rc := range plan.ResourceDrift {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || rc.Change.Actions.NoOp() {
			continue
		}
		real, err := json.Marshal(rc.Change.After)
		if err != nil {
			return nil, err
		}
		d := drift.DriftedInstance{Address: rc.Address, Deposed: rc.DeposedKey, Real: real}
		if rc.Change.AfterSensitive != nil {
			if d.RealSensitive, err = json.Marshal(rc.Change.AfterSensitive); err != nil {
				return nil, err
			}
		}
		r.Drifted = append(r.Drifted, d)
	}
	return r, nil
}

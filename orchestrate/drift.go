package orchestrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
)

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
// r.Cone, at what rests on them in the stored graph (asked of c); it
// records what drifted with c against the serial the plan read, and with
// r.Accept writes the plan's refreshed state as a version of source
// refresh. --cone without addresses is an *kilolock.InvalidError.
func DriftCheck(ctx context.Context, c *client.Client, r DriftCheckRequest) (*DriftResult, error) {
	if r.Cone && len(r.Addresses) == 0 {
		return nil, invalid("--cone widens --address, and no --address was given", "use kl drift check DIR --address ADDR --cone, or no --cone to check the whole state")
	}
	targets := r.Addresses
	if r.Cone {
		v, err := c.Cone(ctx, r.State, r.Addresses, client.ConeOptions{Direction: history.Dependents})
		if err != nil {
			return nil, err
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
		return nil, err
	}
	report, err := driftReport(plan, refreshed)
	if err != nil {
		return nil, err
	}
	report.Scope = targets
	check, err := c.RecordDrift(ctx, r.State, report)
	if err != nil {
		return nil, err
	}
	res := &DriftResult{Check: check, Targets: targets}
	if r.Accept && len(check.Drifted) > 0 {
		a, err := c.AcceptRefresh(ctx, r.State, refreshed)
		if err != nil {
			return nil, fmt.Errorf("drift recorded (check %d), but accepting the refresh failed: %w", check.ID, err)
		}
		res.Accepted = a.Version
	}
	return res, nil
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
		err = cliError("drift check: plan -refresh-only", err)
		if ce := (*CLIError)(nil); errors.As(err, &ce) {
			ce.Advice = "run tofu init in " + r.Dir + " first if it never ran there; kl --verbose drift check shows the CLI's output"
		}
		return nil, nil, err
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

package kilolock

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock/graph"
)

// RollbackWarning is shown with every rollback, dry run or not.
const RollbackWarning = "Rolling back state does not roll back infrastructure: resources created after the target version become orphans in the cloud unless the configuration is reverted too."

// RollbackPlan is what a rollback does, or would do, to the current
// version: instances added back, removed, changed (with attribute paths).
type RollbackPlan struct {
	ChangePlan
	Target Version `json:"target"`
	// Address is the instance or resource address of a resource
	// rollback, "" for a whole-state one.
	Address string `json:"address,omitempty"`
	// Warning is RollbackWarning naming the target version.
	Warning string `json:"warning"`
}

// RollbackOptions describe a rollback.
type RollbackOptions struct {
	Actor string // who asked, recorded on the new version
}

// RollbackResult is an applied rollback.
type RollbackResult struct {
	Plan RollbackPlan `json:"plan"`
	// Version is the new version, nil when the current version already
	// had the target's content (nothing was written).
	Version *Version   `json:"version,omitempty"`
	Stats   WriteStats `json:"stats"`
}

// PlanRollback is the dry run of Rollback: what rolling the state back to
// ref would change, relative to the current version, and the warning.
// Nothing is written. Errors as for Rollback.
func (e *Engine) PlanRollback(ctx context.Context, name string, ref VersionRef) (*RollbackPlan, error) {
	res, err := e.rollback(ctx, name, ref, "", RollbackOptions{}, true)
	if err != nil {
		return nil, err
	}
	return &res.Plan, nil
}

// Rollback appends a new version (source "rollback") whose instances,
// outputs and check results are those of version ref, with the current
// lineage and the current serial + 1. History is never rewritten: the old
// current version stays. It is refused with a *LockedError naming the
// holder while anyone holds the state (any lock: see refuseHolders).
// ErrNotFound when the state does not exist, a *VersionNotFoundError when
// the version does not, ErrEncrypted when either version is client-side
// encrypted.
func (e *Engine) Rollback(ctx context.Context, name string, ref VersionRef, o RollbackOptions) (*RollbackResult, error) {
	return e.rollback(ctx, name, ref, "", o, false)
}

// PlanRollbackResource is the dry run of RollbackResource.
func (e *Engine) PlanRollbackResource(ctx context.Context, name, address string, ref VersionRef) (*RollbackPlan, error) {
	if address == "" {
		return nil, &InvalidError{Code: "address_missing", Message: "a resource rollback needs an address", Hint: "name an instance (aws_instance.web[0]) or a resource (aws_instance.web)"}
	}
	res, err := e.rollback(ctx, name, ref, address, RollbackOptions{}, true)
	if err != nil {
		return nil, err
	}
	return &res.Plan, nil
}

// RollbackResource rolls back one instance — or, for a resource address
// without an index key, every instance of the resource — to what version
// ref held, merged onto the current version as a new version (source
// "rollback", current serial + 1); instances of the address that ref did
// not hold are removed. An *InvalidError when neither version holds
// address; the other errors as for Rollback.
func (e *Engine) RollbackResource(ctx context.Context, name, address string, ref VersionRef, o RollbackOptions) (*RollbackResult, error) {
	if address == "" {
		return nil, &InvalidError{Code: "address_missing", Message: "a resource rollback needs an address", Hint: "name an instance (aws_instance.web[0]) or a resource (aws_instance.web)"}
	}
	return e.rollback(ctx, name, ref, address, o, false)
}

func (e *Engine) rollback(ctx context.Context, name string, ref VersionRef, address string, o RollbackOptions, dryRun bool) (*RollbackResult, error) {
	var target *Document
	w := serverWrite{operation: "rollback", source: SourceRollback, actor: o.Actor, dryRun: dryRun}
	if address != "" {
		w.operation = "rollback resource"
	}
	plan, v, stats, err := e.commitEdit(ctx, name, w, func(st *StateInfo, cur *graph.State) (*graph.State, error) {
		d, tg, err := e.versionGraph(ctx, st, ref)
		if err != nil {
			return nil, err
		}
		target = d
		if address == "" {
			return &graph.State{
				TerraformVersion: cur.TerraformVersion,
				Lineage:          cur.Lineage,
				Outputs:          append([]graph.Output(nil), tg.Outputs...),
				Instances:        append([]graph.Instance(nil), tg.Instances...),
				CheckResults:     tg.CheckResults,
			}, nil
		}
		next := *cur
		next.Instances = make([]graph.Instance, 0, len(cur.Instances))
		found := false
		for i := range cur.Instances {
			if MatchesAddress(&cur.Instances[i], address) {
				found = true
				continue
			}
			next.Instances = append(next.Instances, cur.Instances[i])
		}
		for i := range tg.Instances {
			if MatchesAddress(&tg.Instances[i], address) {
				found = true
				next.Instances = append(next.Instances, tg.Instances[i])
			}
		}
		if !found {
			return nil, &InvalidError{Code: "unknown_address", Message: fmt.Sprintf("neither the current version @%d nor @%d of state %s holds %s", st.Current, d.Version.Number, name, address),
				Hint: "name an instance (aws_instance.web[0]) or a resource (aws_instance.web); `kl history STATE --address ADDR` shows where it was"}
		}
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	ref2 := fmt.Sprintf("@%d", target.Version.Number)
	return &RollbackResult{
		Plan: RollbackPlan{ChangePlan: *plan, Target: target.Version, Address: address,
			Warning: strings.Replace(RollbackWarning, "the target version", ref2, 1)},
		Version: v,
		Stats:   stats,
	}, nil
}

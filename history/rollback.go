package history

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/retention"
)

// RollbackWarning is shown with every rollback, dry run or not.
const RollbackWarning = "Rolling back state does not roll back infrastructure: resources created after the target version become orphans in the cloud unless the configuration is reverted too."

// RollbackPlan is what a rollback does, or would do, to the current
// version: instances added back, removed, changed (with attribute paths).
type RollbackPlan struct {
	ChangePlan
	Target kilolock.Version `json:"target"`
	// Address is the instance or resource address of a resource
	// rollback, "" for a whole-state one.
	Address string `json:"address,omitempty"`
	// Warning is RollbackWarning naming the target version.
	Warning string `json:"warning"`
	// Opaque says the target or the current version is client-side
	// encrypted: the whole version is restored as it was written, and what
	// it changes cannot be listed (ChangeSet is empty).
	Opaque bool `json:"opaque,omitempty"`
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
	Version *kilolock.Version   `json:"version,omitempty"`
	Stats   kilolock.WriteStats `json:"stats"`
}

// PlanRollback is the dry run of Rollback: what rolling the state back to
// ref would change, relative to the current version, and the warning.
// Nothing is written to the state; the target version is pinned against
// retention for RetentionPinTTL, so that the plan can still be applied.
// Errors as for Rollback.
func PlanRollback(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef) (*RollbackPlan, error) {
	res, err := rollback(ctx, e, name, ref, "", RollbackOptions{}, true)
	if err != nil {
		return nil, err
	}
	return &res.Plan, nil
}

// Rollback appends a new version (source "rollback") whose instances,
// outputs and check results are those of version ref, with the current
// lineage and the current serial + 1. History is never rewritten: the old
// current version stays. It is refused with a *LockedError naming the
// holder while anyone holds the state (any lock: see RefuseHolders).
// ErrNotFound when the state does not exist, a *VersionNotFoundError when
// the version does not. When either version is client-side encrypted the
// target's bytes are restored as they were written (an encrypted version
// keeps the serial inside its encryption; a plain one gets the current
// serial + 1) and the plan is Opaque.
func Rollback(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef, o RollbackOptions) (*RollbackResult, error) {
	return rollback(ctx, e, name, ref, "", o, false)
}

// PlanRollbackResource is the dry run of RollbackResource.
func PlanRollbackResource(ctx context.Context, e *kilolock.Engine, name, address string, ref kilolock.VersionRef) (*RollbackPlan, error) {
	if address == "" {
		return nil, &kilolock.InvalidError{Code: "address_missing", Message: "a resource rollback needs an address", Hint: "name an instance (aws_instance.web[0]) or a resource (aws_instance.web)"}
	}
	res, err := rollback(ctx, e, name, ref, address, RollbackOptions{}, true)
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
func RollbackResource(ctx context.Context, e *kilolock.Engine, name, address string, ref kilolock.VersionRef, o RollbackOptions) (*RollbackResult, error) {
	if address == "" {
		return nil, &kilolock.InvalidError{Code: "address_missing", Message: "a resource rollback needs an address", Hint: "name an instance (aws_instance.web[0]) or a resource (aws_instance.web)"}
	}
	return rollback(ctx, e, name, ref, address, o, false)
}

func rollback(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef, address string, o RollbackOptions, dryRun bool) (*RollbackResult, error) {
	if address == "" {
		if res, err := rollbackOpaque(ctx, e, name, ref, o, dryRun); res != nil || err != nil {
			return res, err
		}
	}
	var target *kilolock.Body
	w := serverWrite{operation: "rollback", source: kilolock.SourceRollback, actor: o.Actor, dryRun: dryRun}
	if address != "" {
		w.operation = "rollback resource"
	}
	plan, v, stats, err := commitEdit(ctx, e, name, w, func(st *kilolock.State, cur *graph.State) (*graph.State, error) {
		d, tg, err := e.VersionGraph(ctx, st, ref)
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
			if kilolock.MatchesAddress(&cur.Instances[i], address) {
				found = true
				continue
			}
			next.Instances = append(next.Instances, cur.Instances[i])
		}
		for i := range tg.Instances {
			if kilolock.MatchesAddress(&tg.Instances[i], address) {
				found = true
				next.Instances = append(next.Instances, tg.Instances[i])
			}
		}
		if !found {
			return nil, &kilolock.InvalidError{Code: "unknown_address", Message: fmt.Sprintf("neither the current version @%d nor @%d of state %s holds %s", st.Current, d.Version.Number, name, address),
				Hint: "name an instance (aws_instance.web[0]) or a resource (aws_instance.web); `kl history STATE --address ADDR` shows where it was"}
		}
		return &next, nil
	})
	if err != nil {
		return nil, err
	}
	if dryRun {
		if err := retention.PinRollbackTarget(ctx, e, name, target.Version.Number); err != nil {
			return nil, err
		}
	}
	ref2 := fmt.Sprintf("@%d", target.Version.Number)
	warning := strings.Replace(RollbackWarning, "the target version", ref2, 1)
	if mw := moveWarning(ctx, e, name, target.Version.Number); mw != "" {
		warning += " " + mw
	}
	return &RollbackResult{
		Plan: RollbackPlan{ChangePlan: *plan, Target: target.Version, Address: address,
			Warning: warning},
		Version: v,
		Stats:   stats,
	}, nil
}

// rollbackOpaque is a whole-state rollback where the target or the current
// version is client-side encrypted, so neither can be diffed: the target's
// bytes become the new version, through Write (source rollback). It returns
// nil, nil when neither version is encrypted.
func rollbackOpaque(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef, o RollbackOptions, dryRun bool) (*RollbackResult, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	if st.Current == 0 {
		return nil, fmt.Errorf("state %q has no version yet: %w", name, kilolock.ErrNotFound)
	}
	tv, err := e.Resolve(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	cur, err := e.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	if tv.Format != kilolock.FormatOpaque && cur.Version.Format != kilolock.FormatOpaque {
		return nil, nil
	}
	if err := kilolock.RefuseHolders(st); err != nil {
		return nil, err
	}
	target, err := e.ReadVersion(ctx, name, tv.Number)
	if err != nil {
		return nil, err
	}
	res := &RollbackResult{Plan: RollbackPlan{
		ChangePlan: ChangePlan{State: name, Operation: "rollback", Base: cur.Version},
		Target:     target.Version,
		Warning:    strings.Replace(RollbackWarning, "the target version", fmt.Sprintf("@%d", target.Version.Number), 1),
		Opaque:     true,
	}}
	if dryRun {
		return res, retention.PinRollbackTarget(ctx, e, name, target.Version.Number)
	}
	if cur.Equal(target.Bytes) {
		return res, nil
	}
	body := target.Bytes
	if tv.Format != kilolock.FormatOpaque {
		// A readable target over an encrypted current version: it gets a
		// serial above every earlier one, as every rollback does.
		g, err := graph.Parse(body)
		if err != nil {
			return nil, kilolock.ParseError(err)
		}
		g.Serial = st.Serial + 1
		body = g.Render(g.Format)
	}
	// Force: the target's lineage and serial are the past's by design; the
	// lock rules still apply (RefuseHolders above, the store's below).
	w, err := e.Write(ctx, name, body, kilolock.WriteOptions{Source: kilolock.SourceRollback, Actor: o.Actor, Force: true})
	if err != nil {
		return nil, err
	}
	if !w.Unchanged {
		res.Version, res.Stats = &w.Version, w.Stats
	}
	return res, nil
}

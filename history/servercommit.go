package history

import (
	"context"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

// ChangePlan is what a server-side operation (a rollback, a state rm or
// mv) does, or would do in a dry run, to the current version Base.
type ChangePlan struct {
	State     string           `json:"state"`
	Operation string           `json:"operation"` // "rollback", "rollback resource", "state rm", "state mv"
	Base      kilolock.Version `json:"base"`
	ChangeSet
}

// serverEdit computes a state's next content from its current one. It
// must not modify cur; the caller sets the serial and the layout.
type serverEdit func(st *kilolock.State, cur *graph.State) (*graph.State, error)

// serverWrite describes a version the server makes.
type serverWrite struct {
	operation string
	source    kilolock.Source
	actor     string
	dryRun    bool
}

// commitEdit applies edit to the current version of a state through
// Engine.Edit. It returns the plan, and the new version unless w.dryRun or
// edit changed nothing.
func commitEdit(ctx context.Context, e *kilolock.Engine, name string, w serverWrite, edit serverEdit) (*ChangePlan, *kilolock.Version, kilolock.WriteStats, error) {
	var plan *ChangePlan
	v, stats, err := e.Edit(ctx, name, kilolock.Edit{Operation: w.operation, Source: w.source, Actor: w.actor, Apply: edit,
		Plan: func(base kilolock.Version, cur, next *kilolock.Graph) bool {
			plan = &ChangePlan{State: name, Operation: w.operation, Base: base, ChangeSet: Changes(cur, next)}
			return !w.dryRun && !plan.Empty()
		}})
	if err != nil {
		return nil, nil, kilolock.WriteStats{}, err
	}
	return plan, v, stats, nil
}

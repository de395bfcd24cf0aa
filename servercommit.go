package kilolock

import (
	"context"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock/graph"
)

// ChangePlan is what a server-side operation (a rollback, a state rm or
// mv) does, or would do in a dry run, to the current version Base.
type ChangePlan struct {
	State     string  `json:"state"`
	Operation string  `json:"operation"` // "rollback", "rollback resource", "state rm", "state mv"
	Base      Version `json:"base"`
	ChangeSet
}

// serverEdit computes a state's next content from its current one. It
// must not modify cur; the caller sets the serial and the layout.
type serverEdit func(st *StateInfo, cur *graph.State) (*graph.State, error)

// serverWrite describes a version the server makes.
type serverWrite struct {
	operation string
	source    Source
	actor     string
	dryRun    bool
}

// refuseHolders refuses a server-side write while anyone holds a write
// lock on the state.
// For an exclusive state that is the only holder there can be; for an
// optimistic one it is the simplest safe rule: a holder's later commit is
// merged against its base, and a rollback or move underneath it would be
// merged away or conflict in ways its holder cannot see. (The store's
// transaction re-checks exclusive holders; an optimistic lock taken between
// this check and the commit is not seen.)
func refuseHolders(st *StateInfo) error {
	for _, l := range st.Locks {
		if !l.Shared { // a plan's read lock writes nothing
			return &LockedError{State: st.Name, Holder: l.Info}
		}
	}
	return nil
}

// commitEdit applies edit to the current version of a state and commits
// the result as a new version rendered in the current version's layout,
// with the current serial + 1, recomputing it when another writer got in
// first. It returns the plan, and the new version unless w.dryRun or edit
// changed nothing.
func (e *Engine) commitEdit(ctx context.Context, name string, w serverWrite, edit serverEdit) (*ChangePlan, *Version, WriteStats, error) {
	for attempt := 0; ; attempt++ {
		plan, v, stats, err := e.commitEditOnce(ctx, name, w, edit)
		if errors.Is(err, ErrStale) && attempt < maxStaleRetries {
			continue
		}
		return plan, v, stats, err
	}
}

func (e *Engine) commitEditOnce(ctx context.Context, name string, w serverWrite, edit serverEdit) (*ChangePlan, *Version, WriteStats, error) {
	st, err := e.stateInfo(ctx, name)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	if err := refuseHolders(st); err != nil {
		return nil, nil, WriteStats{}, err
	}
	if st.Current == 0 {
		return nil, nil, WriteStats{}, fmt.Errorf("state %q has no version yet: %w", name, ErrNotFound)
	}
	doc, cur, err := e.load(ctx, st)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	if cur == nil {
		return nil, nil, WriteStats{}, encryptedError(name)
	}
	next, err := edit(st, cur)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	next.Version = 4
	next.Serial = st.Serial + 1
	next.Format = cur.Format
	// Sort reorders in place; never in a slice cur (cached, shared) owns.
	next.Outputs = append([]graph.Output(nil), next.Outputs...)
	next.Sort()
	plan := &ChangePlan{State: name, Operation: w.operation, Base: doc.Version, ChangeSet: changeSet(cur, next)}
	if w.dryRun || plan.Empty() {
		return plan, nil, WriteStats{}, nil
	}
	c := &Commit{Parent: st.Current}
	next, _ = diffInto(c, cur, next)
	c.Version.Source = w.source
	c.Version.Actor = w.actor
	c.Version.Format = next.Format.String()
	v, stats, err := e.commit(ctx, name, c)
	if err != nil {
		return nil, nil, WriteStats{}, err
	}
	if b, index, err := e.keepRendering(*v, next); err != nil {
		e.log.Error("keeping a committed version failed; it is read from the store next time", "state", name, "version", v.Number, "err", err)
		e.cache.drop(name)
	} else {
		e.cache.put(name, b, index)
	}
	e.log.Info("server-side write", "state", name, "operation", w.operation, "version", v.Number, "serial", v.Serial, "actor", w.actor,
		"added", v.Added, "changed", v.Changed, "removed", v.Removed)
	return plan, v, stats, nil
}

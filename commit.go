package kilolock

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kilolock/kilolock/graph"
)

// The engine's commit paths: every version, a client's write or one the
// server makes (Edit), is committed through Engine.commit.

// commit commits c to state name with the engine's default state limit,
// recording and logging a quota's refusal or warning.
func (e *Engine) commit(ctx context.Context, name string, c *Commit) (*Version, WriteStats, error) {
	if err := e.ready(c); err != nil {
		return nil, WriteStats{}, err
	}
	v, stats, err := e.store.Commit(ctx, name, c)
	var qe *QuotaError
	switch {
	case errors.As(err, &qe):
		e.refuseQuota(ctx, name, c, qe)
	case err == nil:
		for _, w := range c.QuotaWarnings {
			e.log.Warn("quota warning", "state", name, "version", v.Number, "scope", w.Scope, "target", w.Target, "managed", w.Result, "soft", w.Limit.Soft, "hard", w.Limit.Hard, "message", w.Message())
		}
	}
	return v, stats, err
}

// ready readies c for the store: the engine's default state limit, and
// upserts' objects for a store that reads them.
func (e *Engine) ready(c *Commit) error {
	c.DefaultQuota = e.defaultQuota
	if _, ok := e.store.(LeanUpserts); ok {
		return nil
	}
	ups := slices.Clone(c.Upserts)
	for i := range ups {
		obj, err := c.Object(&ups[i])
		if err != nil {
			return err
		}
		ups[i].Object = obj
	}
	c.Upserts = ups
	return nil
}

// refuseQuota records and logs a commit a quota refused.
func (e *Engine) refuseQuota(ctx context.Context, name string, c *Commit, qe *QuotaError) {
	r := qe.Refused
	e.log.Warn("commit refused by quota", "state", name, "scope", r.Scope, "target", r.Target, "managed", r.Current, "result", r.Result,
		"soft", r.Limit.Soft, "hard", r.Limit.Hard, "lock_id", c.LockID, "actor", c.Version.Actor, "message", r.Message())
	qs, ok := e.store.(QuotaStore)
	if !ok {
		return
	}
	ev := &QuotaEvent{Verdict: r.Verdict, From: r.From, LockID: c.LockID, Actor: c.Version.Actor}
	if err := qs.RecordQuotaRefusal(context.WithoutCancel(ctx), name, ev); err != nil {
		e.log.Error("recording a quota refusal failed", "state", name, "err", err)
	}
}

// Edit describes a version the server makes from the current one: a
// rollback, a state rm or mv, an accepted refresh.
type Edit struct {
	// Operation names the edit in the log ("rollback", "state rm", …).
	Operation string
	// Source and Actor are the new version's.
	Source Source
	Actor  string
	// Apply computes the state's next content from its current one, cur,
	// which it must not modify; Edit sets the serial (the current + 1),
	// the layout (the current one's) and the order. It may be called more
	// than once, when another writer commits first.
	Apply func(st *State, cur *Graph) (*Graph, error)
	// Plan, when set, sees the current version (base), its graph and the
	// next one before anything is committed; false commits nothing (a dry
	// run, or an edit that changes nothing).
	Plan func(base Version, cur, next *Graph) bool
}

// RefuseHolders refuses a server-side write while anyone holds a write
// lock on the state.
// For an exclusive state that is the only holder there can be; for an
// optimistic one it is the simplest safe rule: a holder's later commit is
// merged against its base, and a rollback or move underneath it would be
// merged away or conflict in ways its holder cannot see. (The store's
// transaction re-checks exclusive holders; an optimistic lock taken between
// this check and the commit is not seen.)
func RefuseHolders(st *State) error {
	for _, l := range st.Locks {
		if !l.Shared { // a plan's read lock writes nothing
			return &LockedError{State: st.Name, Holder: l.Info}
		}
	}
	return nil
}

// Edit applies ed to the current version of a state and commits the result
// as a new version rendered in the current version's layout, with the
// current serial + 1, recomputing it when another writer got in first. It
// returns the new version, nil when ed.Plan said not to commit. A write
// lock held on the state refuses it (RefuseHolders); ErrEncrypted when the
// state is client-side encrypted.
func (e *Engine) Edit(ctx context.Context, name string, ed Edit) (*Version, WriteStats, error) {
	for attempt := 0; ; attempt++ {
		v, stats, err := e.editOnce(ctx, name, ed)
		if errors.Is(err, ErrStale) && attempt < maxStaleRetries {
			continue
		}
		return v, stats, err
	}
}

func (e *Engine) editOnce(ctx context.Context, name string, ed Edit) (*Version, WriteStats, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, WriteStats{}, err
	}
	if err := RefuseHolders(st); err != nil {
		return nil, WriteStats{}, err
	}
	if st.Current == 0 {
		return nil, WriteStats{}, fmt.Errorf("state %q has no version yet: %w", name, ErrNotFound)
	}
	doc, cur, err := e.load(ctx, st)
	if err != nil {
		return nil, WriteStats{}, err
	}
	if cur == nil {
		return nil, WriteStats{}, encryptedError(name)
	}
	next, err := ed.Apply(st, cur)
	if err != nil {
		return nil, WriteStats{}, err
	}
	settle(next, cur, st)
	if ed.Plan != nil && !ed.Plan(doc.Version, cur, next) {
		return nil, WriteStats{}, nil
	}
	c, held := commitOf(st, cur, next, ed.Source, ed.Actor)
	v, stats, err := e.commit(ctx, name, c)
	if err != nil {
		return nil, WriteStats{}, err
	}
	e.keep(v, held)
	e.log.Info("server-side write", "state", name, "operation", ed.Operation, "version", v.Number, "serial", v.Serial, "actor", ed.Actor,
		"added", v.Added, "changed", v.Changed, "removed", v.Removed)
	return v, stats, nil
}

// ParseError turns an error of graph.Parse into the *InvalidError a write
// answers, with its hint.
func ParseError(err error) error { return parseError(err) }

// settle gives next, a server-side edit of cur (the current version of
// st), what every version the server makes has: the next serial, cur's
// layout, its own outputs and the canonical order.
func settle(next, cur *graph.State, st *State) {
	next.Version = 4
	next.Serial = st.Serial + 1
	next.Format = cur.Format
	next.Outputs = append([]graph.Output(nil), next.Outputs...)
	next.Sort()
}

// commitOf is the commit of next against prev (nil: everything is added)
// on top of st's current version, and the graph to keep of it.
func commitOf(st *State, prev, next *graph.State, source Source, actor string) (*Commit, *graph.State) {
	c := &Commit{Parent: st.Current}
	held, _ := diffInto(c, prev, next)
	c.Version.Source = source
	c.Version.Actor = actor
	c.Version.Format = next.Format.String()
	return c, held
}

// keep keeps a version the server committed, rendered from held, for the
// next read.
func (e *Engine) keep(v *Version, held *graph.State) {
	if b, index, err := e.keepRendering(*v, held); err != nil {
		e.log.Error("keeping a committed version failed; it is read from the store next time", "state", v.State, "version", v.Number, "err", err)
		e.cache.drop(v.State)
	} else {
		e.cache.put(v.State, b, index)
	}
}

// NextVersion is one state's next content in a write of several states
// together (Engine.CommitTogether).
type NextVersion struct {
	State *State // as read: the new version's parent is its current one
	// Cur is the state's current content; for a state the write makes,
	// an empty graph with the lineage and layout to write.
	Cur *Graph
	// Next is computed from Cur; CommitTogether gives it the next serial,
	// Cur's layout and the canonical order.
	Next *Graph
	// New marks a state the write makes: everything in Next is added.
	New    bool
	Source Source
	Actor  string
}

// CommitTogether commits new versions of several states in one store
// transaction, as history's moves between states do: it builds each one's
// commit against its current content and hands them, in order, to write,
// which commits all of them or none and returns the versions made, in
// order. The versions are kept for the next read, as Edit's are; a
// *QuotaError from write is recorded as a refusal of the state it names.
func (e *Engine) CommitTogether(ctx context.Context, next []NextVersion, write func([]*Commit) ([]*Version, WriteStats, error)) ([]*Version, WriteStats, error) {
	cs := make([]*Commit, len(next))
	held := make([]*graph.State, len(next))
	for i := range next {
		n := &next[i]
		settle(n.Next, n.Cur, n.State)
		prev := n.Cur
		if n.New {
			prev = nil
		}
		cs[i], held[i] = commitOf(n.State, prev, n.Next, n.Source, n.Actor)
		if err := e.ready(cs[i]); err != nil {
			return nil, WriteStats{}, err
		}
	}
	vs, stats, err := write(cs)
	if err != nil {
		var qe *QuotaError
		if errors.As(err, &qe) {
			for i := range next {
				if next[i].State.Name == qe.State {
					e.refuseQuota(ctx, qe.State, cs[i], qe)
				}
			}
		}
		return nil, WriteStats{}, err
	}
	for i, v := range vs {
		e.keep(v, held[i])
	}
	return vs, stats, nil
}

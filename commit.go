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
	c.DefaultQuota = e.defaultQuota
	if _, ok := e.store.(LeanUpserts); !ok {
		// A store that reads upserts' Object: give them theirs.
		ups := slices.Clone(c.Upserts)
		for i := range ups {
			obj, err := c.Object(&ups[i])
			if err != nil {
				return nil, WriteStats{}, err
			}
			ups[i].Object = obj
		}
		c.Upserts = ups
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
	next.Version = 4
	next.Serial = st.Serial + 1
	next.Format = cur.Format
	next.Outputs = append([]graph.Output(nil), next.Outputs...)
	next.Sort()
	if ed.Plan != nil && !ed.Plan(doc.Version, cur, next) {
		return nil, WriteStats{}, nil
	}
	c := &Commit{Parent: st.Current}
	next, _ = diffInto(c, cur, next)
	c.Version.Source = ed.Source
	c.Version.Actor = ed.Actor
	c.Version.Format = next.Format.String()
	v, stats, err := e.commit(ctx, name, c)
	if err != nil {
		return nil, WriteStats{}, err
	}
	if b, index, err := e.keepRendering(*v, next); err != nil {
		e.log.Error("keeping a committed version failed; it is read from the store next time", "state", name, "version", v.Number, "err", err)
		e.cache.drop(name)
	} else {
		e.cache.put(name, b, index)
	}
	e.log.Info("server-side write", "state", name, "operation", ed.Operation, "version", v.Number, "serial", v.Serial, "actor", ed.Actor,
		"added", v.Added, "changed", v.Changed, "removed", v.Removed)
	return v, stats, nil
}

// ParseError turns an error of graph.Parse into the *InvalidError a write
// answers, with its hint.
func ParseError(err error) error { return parseError(err) }

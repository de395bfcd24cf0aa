package kilolock

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/merge"
)

// Optimistic states admit many lock holders. Each lock records the version
// its holder read (its base). A write under such a lock is the holder's
// state computed from that base, plus its own earlier checkpoints; other
// holders may have committed since. rebase turns such a write into a commit
// onto the current version:
//
//   - nothing committed since the base, or only the writer's own
//     checkpoints: the write goes in as sent (its bytes are kept);
//   - others committed since: the keys the writer changed that nobody else
//     changed are written onto the current version (a merge, rendered by
//     the server); a key both changed differently is a conflict: nothing is
//     written, the rejection is recorded, and the writer gets a 409.
//
// A write without a lock to an optimistic state (`-lock=false`) has no
// recorded base, so it is accepted only as a fast-forward: its serial must
// be above the current one, which every version committed after the writer
// read the state raised. It can therefore never overwrite a write it did not
// see.
//
// A write that cannot be merged, because its body or the current version is
// client-side encrypted (neither says which addresses it changed), goes in
// only as a fast-forward: nobody but its own lock committed since its base
// (see fastForward); otherwise it gets a 409, on record.
//
// The decision is taken against the current version that the commit names
// as its parent; the store's transaction refuses the commit if that version
// is no longer current, and the engine recomputes it.

// rebase adjusts c (the incoming state `in` as changes against the current
// version, whose whole graph cur gives) for an optimistic state. It returns
// the graph to commit when it differs from `in` (a merge), or nil to commit
// `in` as sent. p is the write's parse, which keeps what rebase loads
// across retries.
func (e *Engine) rebase(ctx context.Context, st *State, c *Commit, cur func() (*graph.State, error), in *graph.State, o WriteOptions, p *parsed) (*graph.State, error) {
	var held *Lock
	for i := range st.Locks {
		if st.Locks[i].Info.ID == o.LockID {
			held = &st.Locks[i]
		}
	}
	if held == nil {
		return nil, e.fastForwardOnly(ctx, st, o, in.Serial)
	}
	if held.BaseVersion >= st.Current {
		return nil, nil
	}
	// Every version's serial is above every earlier one's: lock-less
	// writers rely on it to prove they saw the latest version.
	bump := func() (*graph.State, error) {
		if in.Serial > st.Serial {
			return nil, nil
		}
		next := *in
		next.Serial = st.Serial + 1
		c.Version.Serial = next.Serial
		return &next, nil
	}
	records, err := e.store.ChangesSince(ctx, st.Name, held.BaseVersion)
	if err != nil {
		return nil, err
	}
	others := map[merge.Key]merge.Writer{}
	for _, r := range records {
		if r.LockID != o.LockID || r.LockID == "" {
			others[merge.Key{Output: r.Output, ID: r.ID}] = merge.Writer{Version: r.Version, LockID: r.LockID, Actor: r.Actor}
		}
	}
	if len(others) == 0 {
		return bump() // only this lock's own checkpoints since its base
	}

	change := commitKeys(c)
	var ids, names []string
	for _, k := range change {
		if _, ok := others[k]; !ok {
			continue
		}
		if k.Output {
			names = append(names, k.ID)
		} else {
			ids = append(ids, k.ID)
		}
	}
	atBase := map[merge.Key]merge.Value{}
	incoming := map[merge.Key]merge.Value{}
	if len(ids)+len(names) > 0 {
		baseInst, baseOut, err := e.store.HashesAt(ctx, st.Name, held.BaseVersion, ids, names)
		if err != nil {
			return nil, err
		}
		for id, h := range baseInst {
			atBase[merge.Key{ID: id}] = merge.Value{Present: true, Hash: h}
		}
		for n, h := range baseOut {
			atBase[merge.Key{Output: true, ID: n}] = merge.Value{Present: true, Hash: h}
		}
		idx := in.Index()
		for _, id := range ids {
			if i, ok := idx[id]; ok {
				incoming[merge.Key{ID: id}] = merge.Value{Present: true, Hash: in.Instances[i].Hash}
			}
		}
		oidx := in.OutputIndex()
		for _, n := range names {
			if i, ok := oidx[n]; ok {
				incoming[merge.Key{Output: true, ID: n}] = merge.Value{Present: true, Hash: in.Outputs[i].Hash}
			}
		}
		if err := e.sameAsBase(ctx, st, held.BaseVersion, in, atBase, incoming, p); err != nil {
			return nil, err
		}
	}
	keep, conflicts := merge.Resolve(change, others, atBase, incoming)
	if len(conflicts) > 0 {
		addrs := make([]string, len(conflicts))
		for i, cf := range conflicts {
			addrs[i] = cf.Key.String()
		}
		w := conflicts[0].Winner
		return nil, e.reject(ctx, st, o, &ConflictError{
			State:        st.Name,
			Reason:       ReasonWriteConflict,
			Message:      fmt.Sprintf("%s changed since serial %d, which this apply started from: %s", plural(len(addrs), "address was", "addresses were"), held.BaseSerial, strings.Join(addrs, ", ")),
			Hint:         fmt.Sprintf("re-run apply: your plan was made on serial %d and %s committed version %d since; errored.tfstate holds your local result", held.BaseSerial, orDefault(w.Actor, "another writer"), w.Version),
			Addresses:    addrs,
			LatestSerial: st.Serial,
			BaseSerial:   held.BaseSerial,
			Winner:       &Winner{Actor: w.Actor, LockID: w.LockID, Version: w.Version},
		})
	}

	whole, err := cur()
	if err != nil {
		return nil, err
	}
	merged := merge.Apply(whole, in, keep)
	merged.Serial = max(st.Serial+1, in.Serial)
	filterCommit(c, keep)
	c.Version.Merged = true
	c.Version.BaseSerial = held.BaseSerial
	c.Version.Serial = merged.Serial
	c.Version.Lineage = merged.Lineage
	c.Version.Instances = len(merged.Instances)
	c.CheckResults = merged.CheckResults
	return merged, nil
}

// fastForward decides a write onto an optimistic state (or under an apply
// run's lock) that cannot be merged, because its body or the current
// version is client-side encrypted: neither says which addresses it
// changed. It goes in only as a fast-forward: under a lock, when nobody but
// that lock committed since the lock's base (its own checkpoints); without
// one, when its serial is above the current one, as rebase asks of any
// lock-less write. Otherwise it is refused (a *ConflictError, recorded):
// committing it would silently replace what the other writer committed.
func (e *Engine) fastForward(ctx context.Context, st *State, c *Commit, o WriteOptions) error {
	var held *Lock
	for i := range st.Locks {
		if st.Locks[i].Info.ID == o.LockID {
			held = &st.Locks[i]
		}
	}
	if held == nil {
		return e.fastForwardOnly(ctx, st, o, c.Version.Serial)
	}
	if held.BaseVersion >= st.Current {
		return nil
	}
	w, err := e.otherWriter(ctx, st, held)
	if err != nil || w == nil {
		return err // nil: only this lock's own checkpoints since its base
	}
	return e.reject(ctx, st, o, &ConflictError{
		State:  st.Name,
		Reason: ReasonWriteConflict,
		Message: fmt.Sprintf("state %q is client-side encrypted, so writes to it cannot be merged: %s committed version %d since serial %d, which this apply started from; nothing was stored",
			st.Name, orDefault(w.Actor, "another writer"), w.Number, held.BaseSerial),
		Hint: fmt.Sprintf("re-run apply: tofu reads version %d and applies onto it; errored.tfstate holds your local result. Optimistic locking merges plaintext states only: give an encrypted state exclusive locks (`kl state config %s --exclusive-locks`) so that writers wait for each other",
			st.Current, st.Name),
		Addresses:    []string{},
		LatestSerial: st.Serial,
		BaseSerial:   held.BaseSerial,
		Winner:       &Winner{Actor: w.Actor, LockID: w.LockID, Version: w.Number},
	})
}

// fastForwardOnly decides a write without a lock (o.LockID names none
// held) onto an optimistic state: with no recorded base, it goes in only
// when its serial is above the current one, which every version committed
// after the writer read the state raised.
func (e *Engine) fastForwardOnly(ctx context.Context, st *State, o WriteOptions, serial uint64) error {
	if o.LockID != "" || st.Current == 0 || serial > st.Serial {
		return nil // a lock mismatch is reported by the store's transaction
	}
	return e.reject(ctx, st, o, &ConflictError{
		State:        st.Name,
		Reason:       ReasonStaleSerial,
		Message:      fmt.Sprintf("a write without a lock must carry a serial above the current %d, got %d: other writes happened after this state was read", st.Serial, serial),
		Hint:         "run with locking enabled (drop -lock=false) so that concurrent writes are merged or refused in turn; your local result is in errored.tfstate — pull the state, re-plan and apply again",
		LatestSerial: st.Serial,
	})
}

// otherWriter returns the newest version committed after held's base by
// anyone but held's lock, nil when every one was held's own. It reads the
// versions since the base, newest first, a page at a time.
func (e *Engine) otherWriter(ctx context.Context, st *State, held *Lock) (*Version, error) {
	const page = 100
	before := st.Current + 1
	for {
		vs, err := e.store.History(ctx, st.Name, HistoryOptions{Limit: page, Before: before})
		if err != nil {
			return nil, err
		}
		for i := range vs {
			switch {
			case vs[i].Number <= held.BaseVersion:
				return nil, nil
			case vs[i].LockID == "" || vs[i].LockID != held.Info.ID:
				return &vs[i], nil
			}
		}
		if len(vs) < page {
			return nil, nil
		}
		before = vs[len(vs)-1].Number
	}
}

// sameAsBase makes incoming[k] equal atBase[k] for each key whose bytes
// differ but whose meaning is the same: a writer that re-serialized its
// whole state (sorted keys, other escapes) did not change what it merely
// re-spelled, and must not conflict with those who did change it. The
// hashes a store keeps address bytes, so this compares the objects of the
// base version, loaded once per write, and only when some bytes differ:
// the CLIs' own output never pays for it.
func (e *Engine) sameAsBase(ctx context.Context, st *State, base int64, in *graph.State, atBase, incoming map[merge.Key]merge.Value, p *parsed) error {
	var differ []merge.Key
	for k, iv := range incoming {
		if bv, ok := atBase[k]; ok && bv.Hash != iv.Hash {
			differ = append(differ, k)
		}
	}
	if len(differ) == 0 {
		return nil
	}
	if p.base == nil || p.base.Version.Number != base {
		snap, err := e.store.Snapshot(ctx, st.Name, base)
		if err != nil {
			return err
		}
		p.base = snap
	}
	baseIdx := make(map[string]int, len(p.base.Instances))
	for i := range p.base.Instances {
		baseIdx[p.base.Instances[i].ID()] = i
	}
	idx, oidx := in.Index(), in.OutputIndex()
	for _, k := range differ {
		same := false
		if k.Output {
			for i := range p.base.Outputs {
				if p.base.Outputs[i].Name == k.ID {
					same = p.base.Outputs[i].Equal(&in.Outputs[oidx[k.ID]])
				}
			}
		} else if i, ok := baseIdx[k.ID]; ok {
			same = p.base.Instances[i].Equal(&in.Instances[idx[k.ID]])
		}
		if same {
			incoming[k] = atBase[k]
		}
	}
	return nil
}

// reject records a refused commit and logs it, then returns ce.
func (e *Engine) reject(ctx context.Context, st *State, o WriteOptions, ce *ConflictError) error {
	r := &Rejection{
		LockID:       o.LockID,
		Actor:        o.Actor,
		Reason:       ce.Reason,
		Addresses:    ce.Addresses,
		LatestSerial: ce.LatestSerial,
		BaseSerial:   ce.BaseSerial,
		Winner:       ce.Winner,
		Hint:         ce.Hint,
	}
	if r.Actor == "" {
		for _, l := range st.Locks {
			if l.Info.ID == o.LockID {
				r.Actor = l.Info.Who
			}
		}
	}
	if r.Addresses == nil {
		r.Addresses = []string{}
	}
	if err := e.store.RecordRejection(ctx, st.Name, r); err != nil {
		e.log.Error("recording a rejected commit failed", "state", st.Name, "err", err)
	}
	e.log.Warn("commit rejected", "state", st.Name, "reason", ce.Reason, "lock_id", o.LockID, "actor", r.Actor, "addresses", strings.Join(ce.Addresses, ","), "latest_serial", ce.LatestSerial, "base_serial", ce.BaseSerial)
	return ce
}

// commitKeys lists every key c writes or removes.
func commitKeys(c *Commit) []merge.Key {
	keys := make([]merge.Key, 0, len(c.Upserts)+len(c.Removed)+len(c.OutputUpserts)+len(c.OutputsRemoved))
	for i := range c.Upserts {
		keys = append(keys, merge.Key{ID: c.Upserts[i].ID()})
	}
	for _, id := range c.Removed {
		keys = append(keys, merge.Key{ID: id})
	}
	for _, out := range c.OutputUpserts {
		keys = append(keys, merge.Key{Output: true, ID: out.Name})
	}
	for _, n := range c.OutputsRemoved {
		keys = append(keys, merge.Key{Output: true, ID: n})
	}
	return keys
}

// filterCommit drops from c every change whose key is not in keep.
func filterCommit(c *Commit, keep []merge.Key) {
	set := make(map[merge.Key]bool, len(keep))
	for _, k := range keep {
		set[k] = true
	}
	ups := c.Upserts[:0]
	for _, in := range c.Upserts {
		if set[merge.Key{ID: in.ID()}] {
			ups = append(ups, in)
		}
	}
	c.Upserts = ups
	rem := c.Removed[:0]
	for _, id := range c.Removed {
		if set[merge.Key{ID: id}] {
			rem = append(rem, id)
		}
	}
	c.Removed = rem
	outs := c.OutputUpserts[:0]
	for _, o := range c.OutputUpserts {
		if set[merge.Key{Output: true, ID: o.Name}] {
			outs = append(outs, o)
		}
	}
	c.OutputUpserts = outs
	orem := c.OutputsRemoved[:0]
	for _, n := range c.OutputsRemoved {
		if set[merge.Key{Output: true, ID: n}] {
			orem = append(orem, n)
		}
	}
	c.OutputsRemoved = orem
	c.Version.Added, c.Version.Changed, c.Version.Removed = 0, 0, len(c.Removed)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// SetLockMode sets a state's lock mode (creating the state when missing).
// While locks are held it is refused with a *ConflictError naming them.
func (e *Engine) SetLockMode(ctx context.Context, name string, mode LockMode) error {
	if err := ValidStateName(name); err != nil {
		return err
	}
	if err := ValidLockMode(mode); err != nil {
		return err
	}
	return e.store.SetLockMode(ctx, name, mode)
}

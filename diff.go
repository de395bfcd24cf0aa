package kilolock

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/kilolock/kilolock/graph"
)

// diffInto fills c with the changes that turn prev (nil for none) into
// next, and the version metadata of next. It compares by meaning
// (graph.Instance.Equal): an instance or output that next spells otherwise
// but that means the same is no change, costs no row, and the store keeps
// prev's bytes for it. It returns next as the store will hold it: those
// objects with prev's bytes (next itself when there are none), which is
// what the version renders from; and lacking, true when prev is lean
// (graph.State.Lean) and lacks the bytes of an object next respells: the
// caller then diffs into a new Commit against prev's whole graph.
func diffInto(c *Commit, prev, next *graph.State) (held *graph.State, lacking bool) {
	d := newDiffer(c, next)
	var prevOutputs []graph.Output
	switch {
	case prev == nil:
		// A first version: every instance is an upsert. c.Upserts is
		// next's own slice, not a copy of a large state's instances;
		// nothing changes a Commit's Upserts in place but filterCommit,
		// which only merges onto a previous version do.
		c.Version.Added = len(next.Instances)
		c.Upserts = next.Instances[:len(next.Instances):len(next.Instances)]
	case sorted(prev) && sorted(next):
		d.walk(prev)
	default:
		d.byID(prev)
	}
	if prev != nil {
		prevOutputs = prev.Outputs
	}
	d.finish(prevOutputs)
	return d.held, d.lacking
}

// diffHashes is diffInto against a version known only by the hash
// (graph.Instance.Hash) of each of its instances by ID, and its outputs:
// what an IndexReader reads of a version the cache let go of. An instance
// whose bytes are the stored ones is no change; for the few whose bytes
// differ, some reads the stored instances (objects and all), which tell a
// change from a respelling, as diffInto's do. prev is emptied of every ID
// next holds (what is left was removed). The result is as diffInto's
// against the version's whole graph, and never lacking; some's error is
// returned, and ErrStale when it lacks an instance prev holds (the
// version went away since).
func diffHashes(c *Commit, prev map[string]graph.Hash, prevOutputs []graph.Output, next *graph.State, some func(ids []string) ([]graph.Instance, error)) (*graph.State, error) {
	d := newDiffer(c, next)
	const (
		added = iota
		unchanged
		differs
	)
	kind := make([]uint8, len(next.Instances))
	var ids []string
	for i := range next.Instances {
		in := &next.Instances[i]
		id := in.ID()
		h, ok := prev[id]
		switch {
		case !ok:
			kind[i] = added
		case h == in.Hash:
			kind[i] = unchanged
		default:
			kind[i] = differs
			ids = append(ids, id)
		}
		delete(prev, id)
	}
	stored := map[string]*graph.Instance{}
	if len(ids) > 0 {
		olds, err := some(ids)
		if err != nil {
			return nil, err
		}
		for i := range olds {
			stored[olds[i].ID()] = &olds[i]
		}
	}
	for i := range next.Instances {
		switch kind[i] {
		case added:
			d.added(i)
		case differs:
			old, ok := stored[next.Instances[i].ID()]
			if !ok {
				return nil, fmt.Errorf("instance %s of the version diffed against is gone: %w", next.Instances[i].ID(), ErrStale)
			}
			d.same(i, old)
		}
	}
	for id := range prev {
		c.Removed = append(c.Removed, id)
	}
	d.finish(prevOutputs)
	return d.held, nil
}

// newDiffer sets c's version metadata from next and returns the differ
// of its instances.
func newDiffer(c *Commit, next *graph.State) *differ {
	v := &c.Version
	v.Serial = next.Serial
	v.Lineage = next.Lineage
	v.TerraformVersion = next.TerraformVersion
	v.Instances = len(next.Instances)
	c.CheckResults = next.CheckResults
	return &differ{c: c, next: next, held: next}
}

// finish sorts the removed instances and diffs the outputs against
// prevOutputs (those of the previous version, none for a first).
func (d *differ) finish(prevOutputs []graph.Output) {
	c, next := d.c, d.next
	sort.Strings(c.Removed)
	c.Version.Removed = len(c.Removed)

	prevOut := make(map[string]*graph.Output, len(prevOutputs))
	for i := range prevOutputs {
		prevOut[prevOutputs[i].Name] = &prevOutputs[i]
	}
	for i := range next.Outputs {
		o := &next.Outputs[i]
		old, ok := prevOut[o.Name]
		switch {
		case !ok || !old.Equal(o):
			c.OutputUpserts = append(c.OutputUpserts, *o)
		case old.Hash != o.Hash:
			d.hold().Outputs[i] = *old
		}
		delete(prevOut, o.Name)
	}
	for n := range prevOut {
		c.OutputsRemoved = append(c.OutputsRemoved, n)
	}
	sort.Strings(c.OutputsRemoved)
}

// differ is diffInto's instance comparison.
type differ struct {
	c       *Commit
	next    *graph.State
	held    *graph.State
	lacking bool
}

// hold returns the copy of next that takes prev's bytes, made on the
// first respelled object: next (cached, or the caller's) is not changed.
func (d *differ) hold() *graph.State {
	if d.held == d.next {
		cp := *d.next
		cp.Instances = append([]graph.Instance(nil), d.next.Instances...)
		cp.Outputs = append([]graph.Output(nil), d.next.Outputs...)
		d.held = &cp
	}
	return d.held
}

// same compares next's instance i with old, of the same ID.
func (d *differ) same(i int, old *graph.Instance) {
	in := &d.next.Instances[i]
	switch {
	case old.Hash == in.Hash:
	case old.Equal(in):
		if old.Object == nil { // lean: its bytes are not here
			d.lacking = true
			return
		}
		d.hold().Instances[i] = storedCopy(old)
	default:
		d.c.Version.Changed++
		d.c.Upserts = append(d.c.Upserts, *in)
	}
}

func (d *differ) added(i int) {
	d.c.Version.Added++
	d.c.Upserts = append(d.c.Upserts, d.next.Instances[i])
}

// walk compares prev and next, both in Terraform's order (as both CLIs
// write state and the engine keeps it), side by side: no index of either,
// and an ID built only for what was removed.
func (d *differ) walk(prev *graph.State) {
	p, n := prev.Instances, d.next.Instances
	i, j := 0, 0
	for i < len(p) || j < len(n) {
		switch {
		case i == len(p):
			d.added(j)
			j++
		case j == len(n):
			d.c.Removed = append(d.c.Removed, p[i].ID())
			i++
		default:
			switch c := p[i].Compare(&n[j]); {
			case c < 0:
				d.c.Removed = append(d.c.Removed, p[i].ID())
				i++
			case c > 0:
				d.added(j)
				j++
			default:
				d.same(j, &p[i])
				i, j = i+1, j+1
			}
		}
	}
}

// byID compares prev and next in any order, through an index of prev.
func (d *differ) byID(prev *graph.State) {
	prevByID := make(map[string]*graph.Instance, len(prev.Instances))
	for i := range prev.Instances {
		prevByID[prev.Instances[i].ID()] = &prev.Instances[i]
	}
	for i := range d.next.Instances {
		id := d.next.Instances[i].ID()
		if old, ok := prevByID[id]; ok {
			d.same(i, old)
			delete(prevByID, id)
		} else {
			d.added(i)
		}
	}
	for id := range prevByID {
		d.c.Removed = append(d.c.Removed, id)
	}
}

// sorted reports whether s's instances are in Terraform's order, each ID
// once.
func sorted(s *graph.State) bool {
	for i := 1; i < len(s.Instances); i++ {
		if s.Instances[i-1].Compare(&s.Instances[i]) >= 0 {
			return false
		}
	}
	return true
}

// storedCopy is in as a store returns it: its own copy of the object and
// no memory of the document it was parsed from, so that a state holding it
// keeps no earlier document or parse alive.
func storedCopy(in *graph.Instance) graph.Instance {
	cp, err := graph.NewInstance(in.Resource, bytes.Clone(in.Object))
	if err != nil { // cannot happen: in was parsed or loaded
		return *in
	}
	return cp
}

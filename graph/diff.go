package graph

import "sort"

// Changes is what turns one state into another, at instance and output
// granularity. Instances are named by Instance.ID, outputs by name; every
// list is sorted.
type Changes struct {
	Added, Removed, Changed                      []string
	OutputsAdded, OutputsRemoved, OutputsChanged []string
}

// Empty reports whether there are no changes at all.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed)+
		len(c.OutputsAdded)+len(c.OutputsRemoved)+len(c.OutputsChanged) == 0
}

// Diff compares state a with state b. An instance (or output) in b and not
// in a is added, in a and not in b removed, in both and not Equal changed:
// what counts is meaning, so an object another JSON writer re-serialized
// (sorted keys, other escapes, numbers spelled otherwise) is not a change.
// A nil state is an empty one. Lineage, serial and check results are not
// compared.
func Diff(a, b *State) Changes {
	var c Changes
	var ai, bi []Instance
	var ao, bo []Output
	if a != nil {
		ai, ao = a.Instances, a.Outputs
	}
	if b != nil {
		bi, bo = b.Instances, b.Outputs
	}

	before := make(map[instanceID]*Instance, len(ai))
	for i := range ai {
		before[idOf(&ai[i])] = &ai[i]
	}
	for i := range bi {
		in := &bi[i]
		id := idOf(in)
		old, ok := before[id]
		switch {
		case !ok:
			c.Added = append(c.Added, in.ID())
		case !old.Equal(in):
			c.Changed = append(c.Changed, in.ID())
		}
		delete(before, id)
	}
	for _, in := range before {
		c.Removed = append(c.Removed, in.ID())
	}

	outs := make(map[string]*Output, len(ao))
	for i := range ao {
		outs[ao[i].Name] = &ao[i]
	}
	for i := range bo {
		o := &bo[i]
		old, ok := outs[o.Name]
		switch {
		case !ok:
			c.OutputsAdded = append(c.OutputsAdded, o.Name)
		case !old.Equal(o):
			c.OutputsChanged = append(c.OutputsChanged, o.Name)
		}
		delete(outs, o.Name)
	}
	for name := range outs {
		c.OutputsRemoved = append(c.OutputsRemoved, name)
	}

	for _, l := range [...][]string{c.Added, c.Removed, c.Changed, c.OutputsAdded, c.OutputsRemoved, c.OutputsChanged} {
		sort.Strings(l)
	}
	return c
}

// Index maps each instance's ID to its position in s.Instances.
func (s *State) Index() map[string]int {
	m := make(map[string]int, len(s.Instances))
	for i := range s.Instances {
		m[s.Instances[i].ID()] = i
	}
	return m
}

// OutputIndex maps each output's name to its position in s.Outputs.
func (s *State) OutputIndex() map[string]int {
	m := make(map[string]int, len(s.Outputs))
	for i := range s.Outputs {
		m[s.Outputs[i].Name] = i
	}
	return m
}

package merge

import "github.com/kilolock/kilolock/graph"

// Merge three-way merges two states made from one base, at instance
// granularity, by the rules an optimistic state's commit follows (see
// Resolve): the result is theirs with every instance and output that mine
// changed since base put on top. An instance or output both changed since
// base is a conflict unless both ended at the same value (by meaning, not
// spelling); one that only theirs changed keeps their value, even where
// mine still holds base's. With conflicts it returns them, sorted, and no
// state. A nil base is an empty one.
//
// The result takes theirs' lineage and the larger of theirs' serial plus
// one and mine's, as a merged commit does; it shares instances with its
// arguments, which must not change while it is used.
func Merge(base, theirs, mine *graph.State) (*graph.State, []Conflict) {
	change := changedKeys(graph.Diff(theirs, mine))
	others := map[Key]Writer{}
	for _, k := range changedKeys(graph.Diff(base, theirs)) {
		others[k] = Writer{}
	}
	keep, conflicts := Resolve(change, others, valuesOf(base, change), valuesOf(mine, change))
	if len(conflicts) > 0 {
		return nil, conflicts
	}
	merged := Apply(theirs, mine, keep)
	merged.Serial = max(theirs.Serial+1, mine.Serial)
	return merged, nil
}

// changedKeys lists the instances and outputs a diff names.
func changedKeys(c graph.Changes) []Key {
	var keys []Key
	for _, l := range [...][]string{c.Added, c.Removed, c.Changed} {
		for _, id := range l {
			keys = append(keys, Key{ID: id})
		}
	}
	for _, l := range [...][]string{c.OutputsAdded, c.OutputsRemoved, c.OutputsChanged} {
		for _, n := range l {
			keys = append(keys, Key{Output: true, ID: n})
		}
	}
	return keys
}

// valuesOf reads keys' values in s (nil: empty): absent, or present with
// the canonical hash, so that two spellings of one value are equal.
func valuesOf(s *graph.State, keys []Key) map[Key]Value {
	v := make(map[Key]Value, len(keys))
	if s == nil {
		return v
	}
	idx, oidx := s.Index(), s.OutputIndex()
	for _, k := range keys {
		if k.Output {
			if i, ok := oidx[k.ID]; ok {
				v[k] = Value{Present: true, Hash: s.Outputs[i].CanonicalHash()}
			}
		} else if i, ok := idx[k.ID]; ok {
			v[k] = Value{Present: true, Hash: s.Instances[i].CanonicalHash()}
		}
	}
	return v
}

// Apply returns cur with the values of keep taken from in: the merged
// state. Lineage stays cur's; the rest of the header comes from in.
func Apply(cur, in *graph.State, keep []Key) *graph.State {
	set := make(map[Key]bool, len(keep))
	for _, k := range keep {
		set[k] = true
	}
	m := &graph.State{
		Version:          4,
		TerraformVersion: in.TerraformVersion,
		Lineage:          cur.Lineage,
		CheckResults:     in.CheckResults,
		Format:           in.Format,
	}
	m.Instances = make([]graph.Instance, 0, len(cur.Instances)+len(keep))
	for i := range cur.Instances {
		if !set[Key{ID: cur.Instances[i].ID()}] {
			m.Instances = append(m.Instances, cur.Instances[i])
		}
	}
	for i := range in.Instances {
		if set[Key{ID: in.Instances[i].ID()}] {
			m.Instances = append(m.Instances, in.Instances[i])
		}
	}
	for _, o := range cur.Outputs {
		if !set[Key{Output: true, ID: o.Name}] {
			m.Outputs = append(m.Outputs, o)
		}
	}
	for _, o := range in.Outputs {
		if set[Key{Output: true, ID: o.Name}] {
			m.Outputs = append(m.Outputs, o)
		}
	}
	m.Sort()
	return m
}

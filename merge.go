package kilolock

import (
	"fmt"
	"strings"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/merge"
)

// Merge three-way merges two states made from one base, at instance
// granularity, by the rules an optimistic state's commit follows: the
// result is theirs with every instance and output that mine changed since
// base put on top. An instance or output both changed since base is a
// conflict unless both ended at the same value (by meaning, not spelling);
// one that only theirs changed keeps their value, even where mine still
// holds base's. Conflicts return a *ConflictError naming every address and
// no state.
//
// The result takes theirs' lineage and the larger of theirs' serial plus
// one and mine's, as a merged commit does; it shares instances with its
// arguments, which must not change while it is used.
func Merge(base, theirs, mine *Graph) (*Graph, error) {
	if theirs == nil || mine == nil {
		return nil, fmt.Errorf("kilolock: Merge needs both states (theirs and mine); base may be nil for an empty one")
	}
	change := changedKeys(graph.Diff(theirs, mine))
	others := map[merge.Key]merge.Writer{}
	for _, k := range changedKeys(graph.Diff(base, theirs)) {
		others[k] = merge.Writer{}
	}
	keep, conflicts := merge.Resolve(change, others, valuesOf(base, change), valuesOf(mine, change))
	if len(conflicts) > 0 {
		addrs := make([]string, len(conflicts))
		for i, cf := range conflicts {
			addrs[i] = cf.Key.String()
		}
		return nil, &ConflictError{
			Reason:       ReasonWriteConflict,
			Message:      fmt.Sprintf("both states changed %s since their base: %s", plural(len(addrs), "address", "addresses"), strings.Join(addrs, ", ")),
			Hint:         "choose one side's value for each address (or edit one state) and merge again",
			Addresses:    addrs,
			LatestSerial: theirs.Serial,
		}
	}
	merged := applyKeys(theirs, mine, keep)
	merged.Serial = max(theirs.Serial+1, mine.Serial)
	return merged, nil
}

// changedKeys lists the instances and outputs a diff names.
func changedKeys(c graph.Changes) []merge.Key {
	var keys []merge.Key
	for _, l := range [...][]string{c.Added, c.Removed, c.Changed} {
		for _, id := range l {
			keys = append(keys, merge.Key{ID: id})
		}
	}
	for _, l := range [...][]string{c.OutputsAdded, c.OutputsRemoved, c.OutputsChanged} {
		for _, n := range l {
			keys = append(keys, merge.Key{Output: true, ID: n})
		}
	}
	return keys
}

// valuesOf reads keys' values in s (nil: empty): absent, or present with
// the canonical hash, so that two spellings of one value are equal.
func valuesOf(s *Graph, keys []merge.Key) map[merge.Key]merge.Value {
	v := make(map[merge.Key]merge.Value, len(keys))
	if s == nil {
		return v
	}
	idx, oidx := s.Index(), s.OutputIndex()
	for _, k := range keys {
		if k.Output {
			if i, ok := oidx[k.ID]; ok {
				v[k] = merge.Value{Present: true, Hash: s.Outputs[i].CanonicalHash()}
			}
		} else if i, ok := idx[k.ID]; ok {
			v[k] = merge.Value{Present: true, Hash: s.Instances[i].CanonicalHash()}
		}
	}
	return v
}

// Package merge decides 3-way merges of state at instance granularity.
//
// A writer read version B (its base) and now wants to commit; meanwhile
// other writers committed versions after B, so the current version C is no
// longer B. The writer's change is computed against C (what must be written
// to turn C into what the writer sent). For each instance or output in that
// change, Resolve decides:
//
//   - nobody else changed it since B: the writer's value is taken;
//   - somebody else changed it, and the writer's value equals its value at
//     B: the writer never touched it (its copy is merely stale), so C's
//     value stays;
//   - somebody else changed it and so did the writer: a conflict, unless
//     both ended at the same value (then it is not in the change at all).
//
// The package is pure: the caller supplies the hashes, and the database
// transaction that commits the result checks that C is still current.
//
//	keep, conflicts := merge.Resolve(change, others, atBase, incoming)
package merge

import (
	"sort"

	"github.com/kilolock/kilolock/graph"
)

// Key names an instance (by graph.Instance.ID) or an output (by name).
type Key struct {
	Output bool
	ID     string
}

// String returns the key as users see it: an instance address, or
// "output.NAME".
func (k Key) String() string {
	if k.Output {
		return "output." + k.ID
	}
	return k.ID
}

// Writer identifies who committed a change.
type Writer struct {
	Version int64  `json:"version"`
	LockID  string `json:"lock_id"`
	Actor   string `json:"actor"`
}

// Conflict is one key both sides changed differently.
type Conflict struct {
	Key    Key
	Winner Writer // the latest other writer that changed Key
}

// Value is an instance or output's content: present with a hash, or absent.
type Value struct {
	Present bool
	Hash    graph.Hash
}

// Resolve splits change (the keys where the writer's state differs from the
// current version) into the keys to write and the conflicts. others holds
// the keys other writers changed since the writer's base, with the latest
// such writer; atBase and incoming hold the values at the base and in the
// writer's state, for at least the keys in both change and others (a key
// missing from a map is absent). keep preserves change's order; conflicts
// are sorted by key.
func Resolve(change []Key, others map[Key]Writer, atBase, incoming map[Key]Value) (keep []Key, conflicts []Conflict) {
	for _, k := range change {
		w, touched := others[k]
		if !touched {
			keep = append(keep, k)
			continue
		}
		if atBase[k] == incoming[k] {
			continue // the writer's copy is stale here; theirs stands
		}
		conflicts = append(conflicts, Conflict{Key: k, Winner: w})
	}
	sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].Key.String() < conflicts[j].Key.String() })
	return keep, conflicts
}

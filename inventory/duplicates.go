package inventory

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/kilolock/kilolock/tenancy"
)

// Duplicate is one real object that more than one state records.
type Duplicate struct {
	Type string `json:"type"`
	// Key says how the object was told apart: "identity" (the identity
	// object the CLI wrote), "arn", "self_link" or "id".
	Key string `json:"key"`
	// Value is the key's value (the identity object as canonical JSON).
	Value string `json:"value"`
	// Objects are every state and address recording it, in state order.
	Objects []Object `json:"objects"`
}

// Object is where a duplicate is recorded.
type Object struct {
	State   string `json:"state"`
	Version int64  `json:"version"`
	Address string `json:"address"`
}

// Duplicates lists the objects of type typ ("" for every type) that more
// than one state of scope (nil: every state) records, by type then key.
// The same object is the same type and, in order of preference, the
// same identity object, ARN or self_link, else id. Data sources, deposed
// objects and masked values are never counted. The store reads only the
// objects another state records too (by the IdentityKey of each, recorded
// at commit), so memory holds the answer and no more.
func Duplicates(ctx context.Context, st Store, scope *tenancy.QueryScope, typ string) ([]Duplicate, error) {
	byKey := map[[3]string]*Duplicate{}
	err := st.ScanDuplicates(ctx, scope, typ, func(r *Row) bool {
		// The store groups by a hash of the identity: grouped again by
		// the identity itself, so that a collision of hashes never joins
		// two objects.
		key, value, ok := Identity(r.Object)
		if !ok {
			return true
		}
		k := [3]string{r.Type, key, value}
		d := byKey[k]
		if d == nil {
			d = &Duplicate{Type: r.Type, Key: key, Value: value}
			byKey[k] = d
		}
		d.Objects = append(d.Objects, Object{State: r.State, Version: r.Version, Address: r.Address})
		return true
	})
	if err != nil {
		return nil, err
	}
	out := []Duplicate{}
	for _, d := range byKey {
		states := map[string]bool{}
		for _, o := range d.Objects {
			states[o.State] = true
		}
		if len(states) > 1 {
			slices.SortFunc(d.Objects, func(a, b Object) int {
				return cmp.Or(strings.Compare(a.State, b.State), strings.Compare(a.Address, b.Address))
			})
			out = append(out, *d)
		}
	}
	slices.SortFunc(out, func(a, b Duplicate) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(a.Key, b.Key), strings.Compare(a.Value, b.Value))
	})
	return out, nil
}

package inventory

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/kilolock/kilolock/graph"
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
// objects and masked values are never counted. The store is read by type,
// so memory holds one type's objects at a time.
func Duplicates(ctx context.Context, st Store, scope *tenancy.QueryScope, typ string) ([]Duplicate, error) {
	out := []Duplicate{}
	var (
		cur   string
		byKey = map[[2]string]*Duplicate{}
	)
	flush := func() {
		var found []*Duplicate
		for _, d := range byKey {
			states := map[string]bool{}
			for _, o := range d.Objects {
				states[o.State] = true
			}
			if len(states) > 1 {
				found = append(found, d)
			}
		}
		sort.Slice(found, func(i, j int) bool {
			if found[i].Key != found[j].Key {
				return found[i].Key < found[j].Key
			}
			return found[i].Value < found[j].Value
		})
		for _, d := range found {
			out = append(out, *d)
		}
		clear(byKey)
	}
	err := st.ScanCurrent(ctx, ScanFilter{Scope: scope, Type: typ, NoDeposed: true, ByType: true}, func(r *Row) bool {
		if r.Mode != "managed" || r.Deposed != "" {
			return true
		}
		if r.Type != cur {
			flush()
			cur = r.Type
		}
		key, value, ok := identityOf(r.Object)
		if !ok {
			return true
		}
		k := [2]string{key, value}
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
	flush()
	return out, nil
}

// identityOf is what tells an instance object's real object apart: its
// identity object, else its arn or self_link, else its id; ok is false
// when it has none, or a masked one.
func identityOf(obj []byte) (key, value string, ok bool) {
	if m, sensitive := graph.MaskedInstanceObject(obj); sensitive {
		obj = m
	}
	var o struct {
		Identity   map[string]any `json:"identity"`
		Attributes struct {
			ARN      any `json:"arn"`
			SelfLink any `json:"self_link"`
			ID       any `json:"id"`
		} `json:"attributes"`
	}
	if err := json.Unmarshal(obj, &o); err != nil {
		return "", "", false
	}
	if len(o.Identity) > 0 {
		b, err := json.Marshal(o.Identity) // keys sorted: canonical enough to compare
		if err == nil && !strings.Contains(string(b), graph.SensitiveMask) {
			return "identity", string(b), true
		}
	}
	for _, c := range []struct {
		key string
		v   any
	}{{"arn", o.Attributes.ARN}, {"self_link", o.Attributes.SelfLink}, {"id", o.Attributes.ID}} {
		if s, isString := c.v.(string); isString && s != "" && s != graph.SensitiveMask {
			return c.key, s, true
		}
	}
	return "", "", false
}

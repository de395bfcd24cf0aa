package inventory

import (
	"crypto/sha256"
	"encoding/json"
	"strings"

	"github.com/kilolock/kilolock/graph"
)

// Identity is what tells an instance object's real object apart: its
// identity object (as canonical JSON), else its arn or self_link, else its
// id; ok is false when it has none, or a masked one. Sensitive values are
// masked before it looks, so none is ever a key.
func Identity(obj []byte) (key, value string, ok bool) {
	return identity(masked(obj))
}

// identity is Identity of a masked instance object.
func identity(obj []byte) (key, value string, ok bool) {
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

// IdentityKey is what a store records of a current instance object of
// resource type typ, at commit, for the duplicates to group by:
// Identity's key and 16 bytes of a hash of the type, the key and its
// value ("" and nil for an object that is not counted: a data source, a
// deposed object, or one without an identity). The same real object has
// the same hash in every state. A store reads the value back from the
// objects of the few hashes more than one state records.
func IdentityKey(mode, typ, deposed string, obj []byte) (key string, hash []byte) {
	if mode != "managed" || deposed != "" {
		return "", nil
	}
	return identityKey(typ, masked(obj))
}

// identityKey is IdentityKey of a masked object of a managed, current
// instance.
func identityKey(typ string, obj []byte) (key string, hash []byte) {
	key, value, ok := identity(obj)
	if !ok {
		return "", nil
	}
	h := sha256.Sum256([]byte(typ + "\x00" + key + "\x00" + value))
	return key, h[:16]
}

// Record is what a store records of an instance object at commit for the
// inventory: IdentityKey and SearchText, of one masked copy of obj (a
// commit works both out for every object it writes).
func Record(mode, typ, deposed string, obj []byte) (key string, hash []byte, text string) {
	obj = masked(obj)
	if mode == "managed" && deposed == "" {
		key, hash = identityKey(typ, obj)
	}
	return key, hash, searchText(obj)
}

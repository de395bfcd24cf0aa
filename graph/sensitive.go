package graph

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MaskedInstanceObject returns what a store keeps in the clear of an
// instance object that holds sensitive values: the object masked by the
// rule every view follows too (maskObject, hideHolding), encoded.
// sensitive is false (and masked nil) when the object marks nothing
// sensitive.
func MaskedInstanceObject(obj []byte) (masked []byte, sensitive bool) {
	if !marksSensitive(obj) {
		return nil, false
	}
	v, err := decodeJSON(obj)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		// Not an object NewInstance accepts: nothing of it is kept in the
		// clear.
		return []byte("{}"), true
	}
	if !hasMarks(m) {
		return nil, false
	}
	hideHolding(m, maskObject(m, obj, nil))
	b, err := EncodeJSON(m)
	if err != nil {
		return []byte("{}"), true
	}
	return b, true
}

// The one masking rule, for the clear copy a store keeps and for every
// view (kl show --address, kl diff, kl history --address, the web view):
//
//   - a value a path of the object's sensitive_attributes names is masked
//     (in a diff, a path of either side's, on both sides);
//   - marks this program cannot read mask every attribute, and
//     attributes_flat (an encoding it does not follow) is masked whole
//     when anything is marked;
//   - the provider's private blob is masked;
//   - then every value that holds a secret although nothing marks it is
//     masked too (maskHolding): a secret is a leaf of a masked value of
//     the object (or of the other side of a diff), or, in a view of a
//     version, a string of a sensitive output of it (Secrets).

// hasMarks reports whether decoded object m lists sensitive_attributes.
func hasMarks(m map[string]any) bool {
	sa, has := m["sensitive_attributes"]
	return has && sa != nil && !isEmptyList(sa)
}

// maskObject masks in m (obj decoded, owned by the caller) what marks
// name: the paths of obj's sensitive_attributes and extra, attributes_flat
// whole when marked, the private blob. It returns the secrets it hid, for
// hideHolding.
func maskObject(m map[string]any, obj []byte, extra [][]pathStep) []any {
	paths := sensitivePaths(obj)
	marked := hasMarks(m)
	if _, has := m["private"]; has {
		m["private"] = maskOf(m["private"])
	}
	if attrs, has := m["attributes_flat"]; has && (marked || len(extra) > 0) {
		m["attributes_flat"] = maskOf(attrs) // paths in an encoding this program does not read
	}
	attrs, has := m["attributes"]
	if !has {
		return nil
	}
	if marked && paths == nil {
		m["attributes"] = maskOf(attrs) // marks in an encoding this program cannot read
		return nil
	}
	all := append(append([][]pathStep{}, paths...), extra...)
	if len(all) == 0 {
		return nil
	}
	orig, _ := decodeJSON(obj) // a copy to read the secrets from
	o, _ := orig.(map[string]any)
	var secrets []any
	m["attributes"], secrets = maskMarked(attrs, o["attributes"], all)
	return secrets
}

// hideHolding masks in m's attributes every value holding one of secrets.
func hideHolding(m map[string]any, secrets []any) {
	for _, key := range []string{"attributes", "attributes_flat"} {
		if v, has := m[key]; has {
			m[key] = maskHolding(v, secrets)
		}
	}
}

// Secrets are what a view of a version hides wherever it appears
// unmarked: the strings of the version's sensitive outputs (an output
// marked sensitive whose value an instance holds in the clear, such as a
// terraform_data input fed from a variable the output marks). Only strings
// of minSecretInside bytes or more count: a sensitive output of true, 3 or
// "eu" would otherwise mask every such value in the state. The zero value
// hides nothing more than each object marks.
type Secrets struct{ values []any }

// OutputSecrets returns the Secrets of a version's outputs.
func OutputSecrets(outs []Output) Secrets {
	var s Secrets
	for i := range outs {
		if !bytes.Contains(outs[i].Object, []byte(`"sensitive"`)) {
			continue
		}
		v, err := decodeJSON(outs[i].Object)
		m, ok := v.(map[string]any)
		if err != nil || !ok || !isSensitive(m) {
			continue
		}
		var all []any
		leaves(m["value"], &all)
		for _, x := range all {
			if str, ok := x.(string); ok && len(str) >= minSecretInside {
				s.values = append(s.values, str)
			}
		}
	}
	return s
}

// Join returns the secrets of s and t.
func (s Secrets) Join(t Secrets) Secrets {
	return Secrets{values: append(append([]any(nil), s.values...), t.values...)}
}

// marksSensitive reports, without decoding obj, whether it may mark
// something sensitive: a "sensitive_attributes" key whose value is not
// [] or null. OpenTofu writes [] in every object, so most objects are
// told apart by this scan alone. (The key's closing quote right before
// the colon cannot be inside a JSON string, where it would be escaped; an
// attribute of that name nested in the object costs a decode, no more.)
func marksSensitive(obj []byte) bool {
	key := []byte(`"sensitive_attributes":`)
	for rest := obj; ; {
		i := bytes.Index(rest, key)
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(key):], " \t\r\n")
		if !bytes.HasPrefix(rest, []byte("null")) && !emptyList(rest) {
			return true
		}
	}
}

// emptyList reports whether b starts with an empty JSON array.
func emptyList(b []byte) bool {
	if len(b) == 0 || b[0] != '[' {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	return len(b) > 0 && b[0] == ']'
}

// maskMarked masks in attrs (decoded, owned by the caller) the values
// paths name, and returns it with the secrets it hid: the strings and
// numbers inside them, read from orig, another decoding of attrs. Masking
// what holds a secret (maskHolding) is the next step: the clear copy of
// an instance, the views (maskObject) and a drift record (RealChanges)
// take both, so that none shows what another hides.
func maskMarked(attrs, orig any, paths [][]pathStep) (any, []any) {
	for _, p := range paths {
		attrs = maskPath(attrs, p)
	}
	var secrets []any
	secretsOf(orig, attrs, &secrets)
	return attrs, secrets
}

// secretsOf appends to out the leaves (strings and numbers) of orig where
// the same value masked was masked.
func secretsOf(orig, m any, out *[]any) {
	switch mv := m.(type) {
	case masked:
		leaves(orig, out)
	case map[string]any:
		if o, ok := orig.(map[string]any); ok {
			for k, v := range mv {
				secretsOf(o[k], v, out)
			}
		}
	case []any:
		if o, ok := orig.([]any); ok && len(o) == len(mv) {
			for i := range mv {
				secretsOf(o[i], mv[i], out)
			}
		}
	}
}

func leaves(v any, out *[]any) {
	switch x := v.(type) {
	case string, json.Number:
		*out = append(*out, x)
	case map[string]any:
		for _, e := range x {
			leaves(e, out)
		}
	case []any:
		for _, e := range x {
			leaves(e, out)
		}
	}
}

// minSecretInside is the length from which a secret string masks every
// string that holds it, not only the strings equal to it.
const minSecretInside = 4

// maskHolding masks, in v, every value that holds a secret although no
// path marks it: terraform_data's output repeats its sensitive input
// unmarked, and a provider may copy a password into a connection string.
// A string holding a secret string (or equal to a short one) is masked, a
// number equal to a secret number too. Masking more than was marked costs
// only what the views show: the object is sealed whole.
func maskHolding(v any, secrets []any) any {
	if len(secrets) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		for _, sec := range secrets {
			if s, ok := sec.(string); ok && s != "" && (x == s || (len(s) >= minSecretInside && strings.Contains(x, s))) {
				return maskOf(x)
			}
		}
	case json.Number:
		for _, sec := range secrets {
			if n, ok := sec.(json.Number); ok && n == x {
				return maskOf(x)
			}
		}
	case map[string]any:
		for k, e := range x {
			x[k] = maskHolding(e, secrets)
		}
	case []any:
		for i, e := range x {
			x[i] = maskHolding(e, secrets)
		}
	}
	return v
}

func isEmptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}

// MaskedOutputObject is MaskedInstanceObject for an output object: its
// value replaced by SensitiveMask when it is sensitive; sensitive is false
// (and masked nil) when it is not.
func MaskedOutputObject(obj []byte) (masked []byte, sensitive bool) {
	if !bytes.Contains(obj, []byte(`"sensitive"`)) {
		return nil, false
	}
	var head struct {
		Sensitive bool `json:"sensitive"`
	}
	if json.Unmarshal(obj, &head) != nil || !head.Sensitive {
		return nil, false
	}
	m := maskedOutput(obj)
	b, err := EncodeJSON(m)
	if err != nil {
		return []byte("{}"), true
	}
	return b, true
}

package graph

import (
	"bytes"
	"encoding/json"
	"strings"
)

// MaskedInstanceObject returns what a store keeps in the clear of an
// instance object that holds sensitive values: the object with every value
// its sensitive_attributes name replaced by SensitiveMask, and its private
// blob too. sensitive is false (and masked nil) when the object marks
// nothing sensitive. Paths this program cannot follow mask the whole value
// they go into; sensitive_attributes it cannot read at all mask every
// attribute.
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
	if sa, has := m["sensitive_attributes"]; !has || sa == nil || isEmptyList(sa) {
		return nil, false
	}
	paths := sensitivePaths(obj)
	for _, key := range []string{"attributes", "attributes_flat"} {
		attrs, has := m[key]
		if !has {
			continue
		}
		if paths == nil || key == "attributes_flat" {
			m[key] = maskOf(attrs) // paths in an encoding this program does not read
			continue
		}
		orig, _ := decodeJSON(obj) // a copy to read the secrets from
		attrs, secrets := maskMarked(attrs, orig.(map[string]any)[key], paths)
		m[key] = maskHolding(attrs, secrets)
	}
	if _, has := m["private"]; has {
		m["private"] = maskOf(m["private"])
	}
	b, err := EncodeJSON(m)
	if err != nil {
		return []byte("{}"), true
	}
	return b, true
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
// an instance (MaskedInstanceObject) and a drift record (driftChanges)
// take both, so that neither keeps what the other hides.
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

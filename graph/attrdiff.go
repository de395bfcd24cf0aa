package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
)

// SensitiveMask is what stands in for a sensitive value in everything the
// Engine shows: instance attributes, diffs, outputs.
const SensitiveMask = "(sensitive)"

// masked is a sensitive value: it encodes as SensitiveMask. It keeps a
// digest of the value's canonical form so that a diff still sees that a
// secret changed, and only when it did (not when it was re-spelled).
type masked struct{ digest [sha256.Size]byte }

func maskOf(v any) masked {
	if m, ok := v.(masked); ok {
		return m
	}
	b, _ := EncodeJSON(v)
	if c, err := Canonical(b); err == nil {
		b = c
	}
	return masked{digest: sha256.Sum256(b)}
}

func (masked) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(SensitiveMask)), nil }
func (masked) String() string               { return SensitiveMask }

// AttributeChange is one difference between two instance objects (or
// outputs), at a path such as `attributes.input.value` or
// `attributes.tags["Name"]`. Before is absent for an added path, After for
// a removed one; sensitive values are SensitiveMask.
type AttributeChange struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // "added", "removed" or "changed"
	Before any    `json:"before,omitempty"`
	After  any    `json:"after,omitempty"`
}

// String renders the change as `path: before → after`.
func (c AttributeChange) String() string {
	switch c.Kind {
	case "added":
		return fmt.Sprintf("%s: (absent) → %s", c.Path, formatValue(c.After))
	case "removed":
		return fmt.Sprintf("%s: %s → (absent)", c.Path, formatValue(c.Before))
	}
	return fmt.Sprintf("%s: %s → %s", c.Path, formatValue(c.Before), formatValue(c.After))
}

func formatValue(v any) string {
	if _, ok := v.(masked); ok {
		return SensitiveMask
	}
	b, err := EncodeJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// EncodeJSON encodes v as JSON on one line, without escaping HTML.
func EncodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// decodeJSON decodes b keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pathStep is one step of a cty path as Terraform and OpenTofu write
// sensitive_attributes: {"type":"get_attr","value":"password"} or
// {"type":"index","value":{"value":1,"type":"number"}}.
type pathStep struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// maskedObject decodes an instance object masked as the views show it
// (the rule above maskObject): every value named by its own
// sensitive_attributes or by extra (the other side's paths, in a diff),
// and its private blob. It returns the decoded object and the secrets it
// hid; the caller masks what holds them (hideHolding).
func maskedObject(obj []byte, extra [][]pathStep) (map[string]any, []any, error) {
	v, err := decodeJSON(obj)
	if err != nil {
		return nil, nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("instance object is not a JSON object")
	}
	return m, maskObject(m, obj, extra), nil
}

// sensitivePaths reads an object's sensitive_attributes: a list of cty
// paths, each a list of steps. nil when there are none or they are written
// in another encoding.
func sensitivePaths(obj []byte) [][]pathStep {
	var o struct {
		Sensitive json.RawMessage `json:"sensitive_attributes"`
	}
	if json.Unmarshal(obj, &o) != nil || len(o.Sensitive) == 0 {
		return nil
	}
	var paths [][]pathStep
	if json.Unmarshal(o.Sensitive, &paths) != nil {
		return nil
	}
	return paths
}

// maskPath replaces the value at p inside v with the mask and returns v.
// A dynamically typed attribute (terraform_data's input) is stored as
// {"value":…,"type":…}; a step that does not name a key of such an object
// goes into its "value". A step this program cannot follow into the value
// it meets (a set element named by its value, a step of a kind it does not
// know, a path going into a string) masks that whole value: a secret is
// never shown because its path was spelled in an unexpected way. A path to
// nothing (a key that is absent, an index past the end) masks nothing.
func maskPath(v any, p []pathStep) any {
	if len(p) == 0 {
		return maskOf(v)
	}
	step := p[0]
	switch node := v.(type) {
	case nil:
		return v
	case map[string]any:
		key, ok := stepKey(step)
		if !ok {
			return maskOf(v)
		}
		if _, has := node[key]; !has {
			if inner, dyn := node["value"]; dyn && len(node) == 2 && node["type"] != nil {
				node["value"] = maskPath(inner, p)
			}
			return v
		}
		node[key] = maskPath(node[key], p[1:])
	case []any:
		i, ok := stepIndex(step)
		if !ok {
			return maskOf(v)
		}
		if i < 0 || i >= len(node) {
			return v
		}
		node[i] = maskPath(node[i], p[1:])
	case masked:
	default:
		return maskOf(v)
	}
	return v
}

// stepKey is the map key a get_attr or string index step names.
func stepKey(s pathStep) (string, bool) {
	var k string
	switch s.Type {
	case "get_attr":
		return k, json.Unmarshal(s.Value, &k) == nil
	case "index":
		var cty struct {
			Value any `json:"value"`
		}
		if json.Unmarshal(s.Value, &cty) == nil {
			k, ok := cty.Value.(string)
			return k, ok
		}
	}
	return "", false
}

// stepIndex is the list index a number index step names.
func stepIndex(s pathStep) (int, bool) {
	if s.Type != "index" {
		return 0, false
	}
	var cty struct {
		Value json.Number `json:"value"`
	}
	if json.Unmarshal(s.Value, &cty) != nil {
		return 0, false
	}
	i, err := strconv.Atoi(cty.Value.String())
	return i, err == nil
}

// InstanceChanges returns the attribute-level differences between two
// versions of an instance object, sensitive in either side masked in both,
// and so is every value holding a secret of either side or of s.
func InstanceChanges(a, b *Instance, s Secrets) []AttributeChange {
	pa, pb := sensitivePaths(a.Object), sensitivePaths(b.Object)
	ma, sa, errA := maskedObject(a.Object, pb)
	mb, sb, errB := maskedObject(b.Object, pa)
	if errA != nil || errB != nil {
		return []AttributeChange{{Path: "", Kind: "changed", Before: "(unreadable object)", After: "(unreadable object)"}}
	}
	secrets := append(append(append([]any(nil), s.values...), sa...), sb...)
	hideHolding(ma, secrets)
	hideHolding(mb, secrets)
	out := []AttributeChange{}
	// The resource header is outside the object.
	if a.Resource.Provider != b.Resource.Provider {
		out = append(out, AttributeChange{Path: "provider", Kind: "changed", Before: a.Resource.Provider, After: b.Resource.Provider})
	}
	diffValues("", ma, mb, &out)
	return out
}

// OutputChanges is InstanceChanges for output objects: a value sensitive on
// either side is masked on both, and a value holding one of s.
func OutputChanges(a, b *Output, s Secrets) []AttributeChange {
	ma, mb := maskedOutput(a.Object), maskedOutput(b.Object)
	if isSensitive(ma) || isSensitive(mb) {
		ma["value"], mb["value"] = maskOf(ma["value"]), maskOf(mb["value"])
	}
	ma["value"], mb["value"] = maskHolding(ma["value"], s.values), maskHolding(mb["value"], s.values)
	out := []AttributeChange{}
	diffValues("", ma, mb, &out)
	return out
}

// maskedOutput decodes an output object, its value masked when sensitive.
func maskedOutput(obj []byte) map[string]any {
	v, err := decodeJSON(obj)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return map[string]any{"value": "(unreadable output)"}
	}
	if isSensitive(m) {
		m["value"] = maskOf(m["value"])
	}
	return m
}

func isSensitive(m map[string]any) bool { s, _ := m["sensitive"].(bool); return s }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func joinKey(path, key string) string {
	if identRE.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// diffValues appends to out the differences between a and b below path.
func diffValues(path string, a, b any, out *[]AttributeChange) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			p := joinKey(path, k)
			switch {
			case !inA:
				*out = append(*out, AttributeChange{Path: p, Kind: "added", After: y})
			case !inB:
				*out = append(*out, AttributeChange{Path: p, Kind: "removed", Before: x})
			default:
				diffValues(p, x, y, out)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < max(len(av), len(bv)); i++ {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(av):
				*out = append(*out, AttributeChange{Path: p, Kind: "added", After: bv[i]})
			case i >= len(bv):
				*out = append(*out, AttributeChange{Path: p, Kind: "removed", Before: av[i]})
			default:
				diffValues(p, av[i], bv[i], out)
			}
		}
		return
	}
	if !reflect.DeepEqual(a, b) && !sameNumber(a, b) {
		*out = append(*out, AttributeChange{Path: path, Kind: "changed", Before: a, After: b})
	}
}

// sameNumber reports whether a and b are numbers of one value, however
// spelled (1 and 1.0): what Terraform compares, and Equal too.
func sameNumber(a, b any) bool {
	x, ok1 := a.(json.Number)
	y, ok2 := b.(json.Number)
	if !ok1 || !ok2 {
		return false
	}
	cx, err1 := Canonical([]byte(x))
	cy, err2 := Canonical([]byte(y))
	return err1 == nil && err2 == nil && bytes.Equal(cx, cy)
}

// RealChanges compares the attributes of a recorded instance object with
// the real ones a refresh read (realSensitive: terraform-json's
// after_sensitive for them), masked as the clear copy of an instance is
// (MaskedInstanceObject), since a record is kept in the clear whatever the
// store seals: a value sensitive in the record or in the real object is
// SensitiveMask on both sides, and so is every value holding one (a
// connection string that embeds a password, terraform_data's output
// repeating its sensitive input). A masked value shows as changed only
// when it did change.
func RealChanges(recorded, real, realSensitive json.RawMessage) ([]AttributeChange, error) {
	recAttrs, recOrig, err := decodeTwice(recorded)
	if err != nil {
		return nil, err
	}
	rec, ok := recAttrs.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("instance object is not a JSON object")
	}
	realAttrs, realOrig, err := decodeTwice(real)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := realAttrs.(map[string]any); !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	before, after := rec["attributes"], realAttrs
	if _, marks := MaskedInstanceObject(recorded); marks && sensitivePaths(recorded) == nil {
		// Marks in an encoding this program cannot read: every
		// attribute is masked, as in the clear copy.
		before, after = maskOf(before), maskOf(after)
	} else {
		paths := append(sensitivePaths(recorded), sensitiveTreePaths(realSensitive)...)
		var recSecrets, realSecrets []any
		before, recSecrets = maskMarked(before, recOrig.(map[string]any)["attributes"], paths)
		after, realSecrets = maskMarked(after, realOrig, paths)
		secrets := append(recSecrets, realSecrets...)
		before, after = maskHolding(before, secrets), maskHolding(after, secrets)
	}
	var diffs []AttributeChange
	diffValues("", before, after, &diffs)
	return diffs, nil
}

// decodeTwice decodes b twice: a value to mask, and a copy to read the
// secrets from.
func decodeTwice(b []byte) (any, any, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, nil, err
	}
	orig, _ := decodeJSON(b)
	return v, orig, nil
}

// sensitiveTreePaths turns terraform-json's sensitivity tree (true where a
// value is sensitive, objects and lists of such trees around it) into the
// cty paths of sensitive_attributes.
func sensitiveTreePaths(tree json.RawMessage) [][]pathStep {
	if len(tree) == 0 {
		return nil
	}
	v, err := decodeJSON(tree)
	if err != nil {
		return nil
	}
	var out [][]pathStep
	var walk func(v any, at []pathStep)
	walk = func(v any, at []pathStep) {
		switch v := v.(type) {
		case bool:
			if v {
				out = append(out, append([]pathStep(nil), at...))
			}
		case map[string]any:
			for k, x := range v {
				key, _ := json.Marshal(k)
				walk(x, append(at, pathStep{Type: "get_attr", Value: key}))
			}
		case []any:
			for i, x := range v {
				idx := json.RawMessage(`{"value":` + strconv.Itoa(i) + `,"type":"number"}`)
				walk(x, append(at, pathStep{Type: "index", Value: idx}))
			}
		}
	}
	walk(v, nil)
	return out
}

// MaskedObject decodes an instance object with every value its
// sensitive_attributes name, its private blob, and every value holding a
// secret of those or of s replaced by SensitiveMask: what the Engine shows
// of it.
func MaskedObject(obj []byte, s Secrets) (map[string]any, error) {
	m, secrets, err := maskedObject(obj, nil)
	if err != nil {
		return nil, err
	}
	hideHolding(m, append(append([]any(nil), s.values...), secrets...))
	return m, nil
}

// OutputSensitive reports whether an output object is marked sensitive.
func OutputSensitive(obj []byte) bool { return isSensitive(maskedOutput(obj)) }

package kilolock

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// driftChanges compares the attributes of a recorded instance object with
// the real ones a refresh read (realSensitive: terraform-json's
// after_sensitive for them), masked as the clear copy of an instance is
// (MaskedInstanceObject), since a record is kept in the clear whatever the
// store seals: a value sensitive in the record or in the real object is
// SensitiveMask on both sides, and so is every value holding one (a
// connection string that embeds a password, terraform_data's output
// repeating its sensitive input). A masked value shows as changed only
// when it did change.
func driftChanges(recorded, real, realSensitive json.RawMessage) ([]DriftChange, error) {
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
	out := make([]DriftChange, len(diffs))
	for i, d := range diffs {
		out[i] = DriftChange{Path: d.Path, Kind: d.Kind, Recorded: d.Before, Real: d.After}
	}
	return out, nil
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

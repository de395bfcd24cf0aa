package kilolock

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// driftChanges compares the attributes of a recorded instance object with
// the real ones a refresh read (realSensitive: terraform-json's
// after_sensitive for them), with the engine's masking: a value sensitive
// in the record or in the real object is SensitiveMask on both sides, and
// shows as changed only when it did change.
func driftChanges(recorded, real, realSensitive json.RawMessage) ([]DriftChange, error) {
	extra := sensitiveTreePaths(realSensitive)
	rec, own, err := maskedObject(recorded, extra)
	if err != nil {
		return nil, err
	}
	realAttrs, err := decodeJSON(real)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := realAttrs.(map[string]any); !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	for _, p := range append(append([][]pathStep{}, own...), extra...) {
		realAttrs = maskPath(realAttrs, p)
	}
	var diffs []AttributeChange
	diffValues("", rec["attributes"], realAttrs, &diffs)
	out := make([]DriftChange, len(diffs))
	for i, d := range diffs {
		out[i] = DriftChange{Path: d.Path, Kind: d.Kind, Recorded: d.Before, Real: d.After}
	}
	return out, nil
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

package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// NewInstance builds an instance from its resource header and its compact
// instance object, as a store keeps them: it reads the index key, deposed
// key, status and dependencies out of object and computes the hash.
func NewInstance(r Resource, object []byte) (Instance, error) {
	var head struct {
		IndexKey     json.RawMessage `json:"index_key"`
		Status       string          `json:"status"`
		Deposed      string          `json:"deposed"`
		Dependencies []string        `json:"dependencies"`
	}
	if err := json.Unmarshal(object, &head); err != nil {
		return Instance{}, fmt.Errorf("instance of %s: %w", r.Address(), err)
	}
	key, err := parseIndexKey(head.IndexKey)
	if err != nil {
		return Instance{}, fmt.Errorf("instance of %s: %w", r.Address(), err)
	}
	inst := Instance{
		Resource:     r,
		Key:          key,
		Deposed:      head.Deposed,
		Status:       head.Status,
		Object:       object,
		Dependencies: head.Dependencies,
	}
	inst.Hash = instanceHash(&inst.Resource, object)
	return inst, nil
}

// NewOutput builds an output from its name and compact object.
func NewOutput(name string, object []byte) Output {
	return Output{Name: name, Object: object, Hash: sha256.Sum256(object)}
}

// parseIndexKey decodes an "index_key" value: absent or null, an integer, or
// a string.
func parseIndexKey(raw json.RawMessage) (IndexKey, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return IndexKey{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return IndexKey{}, fmt.Errorf("index_key: %w", err)
		}
		return IndexKey{Kind: StringKey, Str: s}, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return IndexKey{}, fmt.Errorf("index_key %s is neither an integer nor a string", raw)
	}
	return IndexKey{Kind: IntKey, Int: n}, nil
}

// instanceHash is the content address of an instance: its resource header
// and its compact object, each length-prefixed so no two inputs collide.
func instanceHash(r *Resource, object []byte) Hash {
	h := sha256.New()
	for _, s := range [...]string{r.Module, r.Mode, r.Type, r.Name, r.Each, r.Provider} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	fmt.Fprintf(h, "%d:", len(object))
	h.Write(object)
	var out Hash
	h.Sum(out[:0])
	return out
}

// marshalNoEscape encodes v as JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

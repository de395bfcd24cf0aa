package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// NewInstance builds an instance from its resource header and its compact
// instance object, as a store keeps them: it reads the index key, deposed
// key, status and dependencies out of object and computes the hash. It reads
// them exactly as Parse does, so an instance rebuilt from (Resource, Object)
// equals the parsed one in all but its memory of the posted bytes.
func NewInstance(r Resource, object []byte) (Instance, error) {
	s := scanner{data: object}
	s.ws()
	if s.pos >= len(object) || object[s.pos] != '{' {
		if s.pos < len(object) && s.value(0, 0) && s.end() {
			return Instance{}, fmt.Errorf("instance of %s: the instance object is not a JSON object", r.Address())
		}
		if s.err == nil {
			s.failEOF()
		}
		return Instance{}, fmt.Errorf("instance of %s: %w", r.Address(), s.err)
	}
	h, ok := s.instance(0)
	if !ok || !s.end() {
		return Instance{}, fmt.Errorf("instance of %s: %w", r.Address(), s.err)
	}
	inst := Instance{Resource: r, Object: object}
	if at, reason := decodeHead(object, h, &inst); reason != "" {
		return Instance{}, fmt.Errorf("instance of %s: %w", r.Address(), &FieldError{Path: "instance", Offset: int64(at), Reason: reason})
	}
	inst.Hash = instanceHash(&inst.Resource, object)
	return inst, nil
}

// NewOutput builds an output from its name and compact object.
func NewOutput(name string, object []byte) Output {
	return Output{Name: name, Object: object, Hash: sha256.Sum256(object)}
}

// instanceHash is the content address of an instance: its resource header
// and its compact object, each length-prefixed ("<len>:<bytes>") so no two
// inputs collide.
func instanceHash(r *Resource, object []byte) Hash {
	h := sha256.New()
	var buf [24]byte
	for _, s := range [...]string{r.Module, r.Mode, r.Type, r.Name, r.Each, r.Provider} {
		h.Write(append(strconv.AppendInt(buf[:0], int64(len(s)), 10), ':'))
		io.WriteString(h, s)
	}
	h.Write(append(strconv.AppendInt(buf[:0], int64(len(object)), 10), ':'))
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

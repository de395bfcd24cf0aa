package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
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

// ObjectFrom returns in's object: its Object, or for a lean instance (see
// State.Lean, ParseOptions.Lean) its fragment read from doc, the document
// in was parsed from (or rendered to by RenderIndexTo), compacted and
// checked against in.Hash. Each call reads it anew, into memory of its own.
func (in *Instance) ObjectFrom(doc io.ReaderAt) ([]byte, error) {
	if in.Object != nil || !in.lean() {
		return in.Object, nil
	}
	bp := fragBufs.Get().(*[]byte)
	frag := slices.Grow((*bp)[:0], in.fragLen)[:in.fragLen]
	defer func() {
		if cap(frag) <= 1<<20 {
			*bp = frag
			fragBufs.Put(bp)
		}
	}()
	if n, err := doc.ReadAt(frag, in.fragOff); n < len(frag) {
		return nil, fmt.Errorf("instance %s: read its bytes back: %w", in.ID(), err)
	}
	s := scanner{data: frag, emit: true, out: make([]byte, 0, len(frag)), track: true, canon: true, indent: in.fragmentFormat == FormatIndent, base: instanceLevel}
	if _, ok := s.instance(instanceDepth); !ok || !s.end() {
		return nil, fmt.Errorf("instance %s: its bytes read back are not an instance: %w", in.ID(), s.err)
	}
	s.flush()
	if instanceHash(&in.Resource, s.out) != in.Hash {
		return nil, fmt.Errorf("instance %s: the bytes read back are not its object", in.ID())
	}
	return s.out, nil
}

// fragBufs are ObjectFrom's buffers for the fragments it reads back.
var fragBufs = sync.Pool{New: func() any { return new([]byte) }}

// NewOutput builds an output from its name and compact object.
func NewOutput(name string, object []byte) Output {
	return Output{Name: name, Object: object, Hash: sha256.Sum256(object)}
}

// CanonicalHash is the instance's identity: SHA-256 over its resource
// header and the canonical form of its Object (see Canonical), so every
// spelling of one instance object shares it, where Hash, the address of
// the exact bytes, differs. It costs one pass over Object; Equal is the
// cheaper comparison.
func (in *Instance) CanonicalHash() Hash {
	if in.lean() {
		return in.canon
	}
	return canonicalHashOf(in)
}

// Spelling is the address of the bytes a lean instance (see IsLean) was
// parsed from: SHA-256 over its fragment, the document's layout and its
// resource header. A store that keeps it beside the instance's Hash and
// CanonicalHash (as Spelled) lets a later parse of a document that spells
// the instance so find both without compacting or hashing it
// (ParseOptions.Spelled). ok is false when in is not lean or was not
// parsed so (found in a Prev that did not know it, loaded, rendered).
func (in *Instance) Spelling() (spelling Hash, ok bool) {
	return in.spelling, in.lean() && !in.spelling.IsZero()
}

// spellingOf is Instance.Spelling of the fragment frag of resource r in a
// document of format f. A fragment says its instance's key and deposed
// key, so equal spellings are one instance object, byte for byte.
func spellingOf(f Format, r *Resource, frag []byte) Hash {
	bp := hashBufs.Get().(*[]byte)
	b := appendHeader(append((*bp)[:0], "spelling:"...), r)
	b = strconv.AppendInt(append(b, byte('0'+f)), int64(len(frag)), 10)
	b = append(b, ':')
	d := sha256.New()
	d.Write(b)
	d.Write(frag)
	var h Hash
	d.Sum(h[:0])
	if cap(b) <= 1<<20 {
		*bp = b
		hashBufs.Put(bp)
	}
	return h
}

// canonicalHashOf computes in's canonical hash from its Object.
func canonicalHashOf(in *Instance) Hash {
	c := getCanon()
	defer putCanon(c)
	// The header goes first and the object last, so the object needs no
	// length prefix.
	c.out = appendHeader(append(c.out[:0], "canonical instance:"...), &in.Resource)
	c.out = canonicalObject(c, c.out, in.Object)
	return sha256.Sum256(c.out)
}

// Equal reports whether in and o are the same instance object by meaning:
// the same resource header and the same canonical object, however each was
// spelled (key order, escapes, number spelling, whitespace). When their
// Hashes are equal it costs nothing more; else one pass over each Object
// (a lean instance, see State.Lean, knows its canonical hash).
func (in *Instance) Equal(o *Instance) bool {
	if in.Resource != o.Resource {
		return false
	}
	if in.Hash == o.Hash {
		return true
	}
	if in.lean() || o.lean() {
		return in.CanonicalHash() == o.CanonicalHash()
	}
	return sameMeaning(in.Object, o.Object)
}

// CanonicalHash is the output's identity: SHA-256 over the canonical form
// of its Object (the name is not part of it, as it is not of Hash).
func (o *Output) CanonicalHash() Hash {
	c := getCanon()
	defer putCanon(c)
	c.out = canonicalObject(c, append(c.out[:0], "canonical output:"...), o.Object)
	return sha256.Sum256(c.out)
}

// Equal reports whether o and p hold the same value, type and flags by
// meaning, however each was spelled. Names are not compared.
func (o *Output) Equal(p *Output) bool {
	return o.Hash == p.Hash || sameMeaning(o.Object, p.Object)
}

// sameMeaning reports whether two JSON values have one canonical form.
func sameMeaning(a, b []byte) bool {
	c := getCanon()
	defer putCanon(c)
	c.out = canonicalObject(c, c.out[:0], a)
	c.out2 = canonicalObject(c, c.out2[:0], b)
	return bytes.Equal(c.out, c.out2)
}

// canonicalObject appends the canonical form of obj, or obj as it is when
// it is not one valid JSON value (an Object built by hand, not by Parse or
// NewInstance): such an object is then equal only to its exact bytes.
func canonicalObject(c *canon, dst, obj []byte) []byte {
	s := &c.scan
	*s = scanner{data: obj, stack: s.stack[:0]}
	s.ws()
	if s.pos >= len(obj) || !s.value(0, 0) || !s.end() || len(obj) > math.MaxUint32 {
		return append(dst, obj...)
	}
	return c.appendCanonical(dst, obj)
}

// instanceHash is the content address of an instance: its resource header
// and its compact object, each length-prefixed ("<len>:<bytes>") so no two
// inputs collide.
func instanceHash(r *Resource, object []byte) Hash {
	bp := hashBufs.Get().(*[]byte)
	b := appendHeader((*bp)[:0], r)
	b = strconv.AppendInt(b, int64(len(object)), 10)
	b = append(b, ':')
	b = append(b, object...)
	h := sha256.Sum256(b)
	if cap(b) <= 1<<20 {
		*bp = b
		hashBufs.Put(bp)
	}
	return h
}

var hashBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendHeader appends the resource header's fields, each length-prefixed.
func appendHeader(b []byte, r *Resource) []byte {
	for _, s := range [...]string{r.Module, r.Mode, r.Type, r.Name, r.Each, r.Provider} {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	return b
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

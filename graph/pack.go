package graph

import (
	"encoding/binary"
	"errors"
)

// Packed is a State packed into one byte slice: what a cache keeps of a
// lean state (see Lean) between writes. A lean State costs a struct of
// some 350 bytes per instance, each with a dozen pointers the garbage
// collector follows at every collection; packed, an instance costs about
// a hundred bytes and the collector never looks inside. Unpack gives the
// State back, equal in all but its fragments (see Detach): what the next
// ParseWith needs as its Prev. The zero Packed is no state.
type Packed struct{ b []byte }

// Size is the length of the packed bytes.
func (p Packed) Size() int { return len(p.b) }

// IsZero reports whether p packs no state.
func (p Packed) IsZero() bool { return p.b == nil }

// packVersion starts every Packed: a State packed by another layout is
// not read as this one.
const packVersion = 1

// instance flags of a Packed.
const (
	packObject   = 1 << iota // the instance has an Object
	packObjFirst             // its objFirst is &Object[0]
	packCanon                // it knows its canonical hash
	packCanonical
)

// Pack packs s (which it does not change), dropping its instances'
// fragments as Detach does.
func (s *State) Pack() Packed {
	w := packWriter{strs: map[string]uint64{}}
	b := append(make([]byte, 0, 64+len(s.Instances)*100), packVersion)
	b = binary.AppendUvarint(b, uint64(s.Version))
	b = w.str(b, s.TerraformVersion)
	b = binary.AppendUvarint(b, s.Serial)
	b = w.str(b, s.Lineage)
	b = append(b, byte(s.Format))
	b = packBytes(b, s.CheckResults)
	b = binary.AppendUvarint(b, uint64(len(s.Outputs)))
	for i := range s.Outputs {
		o := &s.Outputs[i]
		b = w.str(b, o.Name)
		b = packBytes(b, o.Object)
		b = append(b, o.Hash[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Instances)))
	for i := range s.Instances {
		in := &s.Instances[i]
		r := &in.Resource
		for k, f := range [...]string{r.Module, r.Mode, r.Type, r.Name, r.Each, r.Provider, in.Key.Str, in.Deposed, in.Status} {
			b = w.field(b, k, f)
		}
		b = append(b, byte(in.Key.Kind))
		b = binary.AppendVarint(b, in.Key.Int)
		b = binary.AppendUvarint(b, uint64(len(in.Dependencies)))
		for _, d := range in.Dependencies {
			b = w.ref(b, d)
		}
		var flags byte
		if in.Object != nil {
			flags |= packObject
			if len(in.Object) > 0 && in.objFirst == &in.Object[0] {
				flags |= packObjFirst
			}
		}
		if !in.canon.IsZero() {
			flags |= packCanon
		}
		if in.canonical {
			flags |= packCanonical
		}
		b = append(b, flags, byte(in.fragmentFormat))
		if in.Object != nil {
			b = packBytes(b, in.Object)
		}
		b = append(b, in.Hash[:]...)
		if !in.canon.IsZero() {
			b = append(b, in.canon[:]...)
		}
		b = binary.LittleEndian.AppendUint64(b, in.fragHash)
		b = binary.LittleEndian.AppendUint64(b, in.fragSum)
		b = binary.AppendUvarint(b, uint64(in.fragLen))
		b = binary.AppendVarint(b, in.fragOff)
	}
	// The strings the instances refer to go last, in one piece, so that
	// Unpack makes them one string that every instance shares.
	at := len(b)
	b = binary.AppendUvarint(b, uint64(len(w.list)))
	for _, s := range w.list {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	for _, s := range w.list {
		b = append(b, s...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(at))
	return Packed{b: b[:len(b):len(b)]}
}

// packWriter numbers the strings instances refer to, each once.
type packWriter struct {
	strs map[string]uint64
	list []string
	// last is each header field's string in the instance before and its
	// number: the instances of a resource share all but their key, so
	// most fields are numbered without a look-up in strs.
	last [9]struct {
		s   string
		n   uint64
		set bool
	}
}

// field is ref of the k-th of an instance's header fields.
func (w *packWriter) field(b []byte, k int, s string) []byte {
	l := &w.last[k]
	if !l.set || l.s != s {
		l.s, l.n, l.set = s, w.number(s), true
	}
	return binary.AppendUvarint(b, l.n)
}

func (w *packWriter) ref(b []byte, s string) []byte {
	return binary.AppendUvarint(b, w.number(s))
}

// number is s's number, given the first time it is asked for.
func (w *packWriter) number(s string) uint64 {
	n, ok := w.strs[s]
	if !ok {
		n = uint64(len(w.list))
		w.strs[s] = n
		w.list = append(w.list, s)
	}
	return n
}

// str appends s itself: a string of the state, not of its instances.
func (w *packWriter) str(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// packBytes appends p, telling nil from empty.
func packBytes(b, p []byte) []byte {
	if p == nil {
		return append(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(p))+1), p...)
}

// errPacked is Unpack's error for bytes Pack did not make.
var errPacked = errors.New("graph: not a packed state")

// Unpack returns the State p packs: a new one each call, which the caller
// may change. Its objects are its own copies; its strings share one
// allocation.
func (p Packed) Unpack() (*State, error) {
	if len(p.b) < 5 || p.b[0] != packVersion {
		return nil, errPacked
	}
	at := int(binary.LittleEndian.Uint32(p.b[len(p.b)-4:]))
	if at >= len(p.b)-4 {
		return nil, errPacked
	}
	r := packReader{b: p.b[1:at]}
	strs, err := unpackStrings(p.b[at : len(p.b)-4])
	if err != nil {
		return nil, err
	}
	s := &State{Version: int(r.uvarint())}
	s.TerraformVersion = r.str()
	s.Serial = r.uvarint()
	s.Lineage = r.str()
	s.Format = Format(r.byte())
	s.CheckResults = r.bytes()
	if n := r.count(); n > 0 {
		s.Outputs = make([]Output, n)
		for i := range s.Outputs {
			o := &s.Outputs[i]
			o.Name = r.str()
			o.Object = r.bytes()
			r.hash(&o.Hash)
		}
	}
	n := r.count()
	s.Instances = make([]Instance, n)
	ref := func() string {
		k := r.uvarint()
		if k >= uint64(len(strs)) {
			r.err = errPacked
			return ""
		}
		return strs[k]
	}
	for i := range s.Instances {
		in := &s.Instances[i]
		res := &in.Resource
		res.Module, res.Mode, res.Type, res.Name, res.Each, res.Provider = ref(), ref(), ref(), ref(), ref(), ref()
		in.Key.Str, in.Deposed, in.Status = ref(), ref(), ref()
		in.Key.Kind = KeyKind(r.byte())
		in.Key.Int = r.varint()
		if deps := r.count(); deps > 0 {
			in.Dependencies = make([]string, deps)
			for j := range in.Dependencies {
				in.Dependencies[j] = ref()
			}
		}
		flags := r.byte()
		in.fragmentFormat = Format(r.byte())
		in.canonical = flags&packCanonical != 0
		if flags&packObject != 0 {
			in.Object = r.bytes()
			if flags&packObjFirst != 0 && len(in.Object) > 0 {
				in.objFirst = &in.Object[0]
			}
		}
		r.hash(&in.Hash)
		if flags&packCanon != 0 {
			r.hash(&in.canon)
		}
		in.fragHash = r.uint64()
		in.fragSum = r.uint64()
		in.fragLen = int(r.uvarint())
		in.fragOff = r.varint()
		if r.err != nil {
			break
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errPacked
	}
	return s, nil
}

// unpackStrings reads the string table Pack appended: one string, cut.
func unpackStrings(b []byte) ([]string, error) {
	r := packReader{b: b}
	n := r.count()
	lens := make([]int, n)
	total := 0
	for i := range lens {
		lens[i] = int(r.uvarint())
		total += lens[i]
	}
	if r.err != nil || total != len(r.b) {
		return nil, errPacked
	}
	all := string(r.b)
	strs := make([]string, n)
	for i, l := range lens {
		strs[i], all = all[:l], all[l:]
	}
	return strs, nil
}

// packReader reads what Pack wrote; its first error sticks, and every
// read after it gives zero values.
type packReader struct {
	b   []byte
	err error
}

func (r *packReader) fail() { r.err, r.b = errPacked, nil }

func (r *packReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *packReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count is a length, no more than the bytes left could hold.
func (r *packReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *packReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *packReader) uint64() uint64 {
	if len(r.b) < 8 {
		r.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *packReader) hash(h *Hash) {
	if len(r.b) < len(h) {
		r.fail()
		return
	}
	r.b = r.b[copy(h[:], r.b):]
}

// take is the next n bytes, still in r's slice.
func (r *packReader) take(n int) []byte {
	if n > len(r.b) {
		r.fail()
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *packReader) str() string { return string(r.take(r.count())) }

// bytes is a copy of what packBytes appended: the caller's to keep.
func (r *packReader) bytes() []byte {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n-1 > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	return append([]byte{}, r.take(int(n-1))...)
}

package graph

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical returns the canonical form of the JSON value v: what two
// spellings of one meaning share. It follows RFC 8785 (the JSON
// Canonicalization Scheme) for everything but numbers:
//
//   - no insignificant whitespace;
//   - object members sorted by their keys' UTF-16 code units; of
//     duplicate keys the last one is kept, as encoding/json (which both
//     CLIs read state with) keeps it;
//   - strings with the minimal escapes: \" and \\, \b \f \n \r \t, \u00XX
//     (lowercase) for the other control characters, every other character
//     as UTF-8. Invalid UTF-8 and lone surrogate escapes are U+FFFD, which
//     is what encoding/json reads them as;
//   - numbers by their exact decimal value. RFC 8785 reads every number as
//     an IEEE-754 double, but Terraform and OpenTofu read state numbers as
//     arbitrary-precision decimals (cty), where 9007199254740993 and
//     9007199254740992 differ: JCS would merge them, so Canonical does not.
//     1, 1.0, 1e0, 10e-1 and 0.1e1 are one value, as are 0 and -0. The
//     value is written as ECMAScript writes a double (digits without
//     leading or trailing zeros, no exponent from 1e-6 up to 1e21, else
//     d.ddde±N), so a number that is the shortest spelling of a double,
//     which is what every double-based writer produces, comes out exactly
//     as in RFC 8785.
//
// Canonical(Canonical(v)) equals Canonical(v). Invalid JSON is a
// *SyntaxError, as Parse reports it; a value of 4 GiB or more is an error.
func Canonical(v []byte) ([]byte, error) {
	s := scanner{data: v}
	s.ws()
	if s.pos >= len(v) {
		s.failEOF()
		return nil, s.err
	}
	if !s.value(0, 0) || !s.end() {
		return nil, s.err
	}
	if len(v) > math.MaxUint32 {
		return nil, errors.New("canonical form: a JSON value of 4 GiB or more")
	}
	c := getCanon()
	defer putCanon(c)
	return c.appendCanonical(nil, v), nil
}

// canon writes canonical forms. One is reused through canonPool; its
// buffers grow to the largest value it canonicalized.
type canon struct {
	src  []byte
	recs []container
	// members is a stack: each object being written holds a run of it.
	members []member
	// keys holds decoded keys that differ from their literal (escapes or
	// invalid UTF-8), for sorting; a stack like members.
	keys  []byte
	stack []uint32
	// out and out2 are output buffers for callers comparing two values;
	// scan validates what they are given.
	out, out2 []byte
	scan      scanner
}

// container is one object or array of the value, in document order: end is
// the offset of its closing bracket, next the index of the first container
// after it (skipping its descendants).
type container struct{ end, next uint32 }

// member is one member of an object being written: the key literal
// [key, keyEnd), its decoded form (in keys when decoded, else the literal's
// body), the value [val, valEnd) and, for a container value, its record.
type member struct {
	key, keyEnd, val, valEnd int
	dec, decEnd              int // into keys; dec < 0: the literal's body
	rec                      int
}

var canonPool = sync.Pool{New: func() any { return new(canon) }}

func getCanon() *canon { return canonPool.Get().(*canon) }

// putCanon returns c to the pool unless it grew past what a large instance
// needs, so that one huge value does not stay pinned in memory.
func putCanon(c *canon) {
	c.src, c.scan.data = nil, nil
	if cap(c.recs) > 1<<16 || cap(c.members) > 1<<14 || cap(c.keys) > 1<<20 || cap(c.out)+cap(c.out2) > 4<<20 {
		return
	}
	canonPool.Put(c)
}

// appendCanonical appends the canonical form of src, which must be one
// valid JSON value (whitespace around it allowed) shorter than 4 GiB.
//
// The cost is linear in len(src) plus the sorting of each object's keys: a
// first pass records where every container ends, so that gathering an
// object's members skips nested values without reading them again, and a
// second pass writes every value once, in key order.
func (c *canon) appendCanonical(dst, src []byte) []byte {
	c.src = src
	c.index()
	i := skipWS(src, 0)
	r := 0
	dst, _, _ = c.value(dst, i, r)
	return dst
}

// index records every container of src in document order.
func (c *canon) index() {
	src := c.src
	c.recs = c.recs[:0]
	c.stack = c.stack[:0]
	for i := 0; i < len(src); {
		switch src[i] {
		case '"':
			i = stringEnd(src, i)
			continue
		case '{', '[':
			c.stack = append(c.stack, uint32(len(c.recs)))
			c.recs = append(c.recs, container{})
		case '}', ']':
			top := c.stack[len(c.stack)-1]
			c.stack = c.stack[:len(c.stack)-1]
			c.recs[top] = container{end: uint32(i), next: uint32(len(c.recs))}
		}
		i++
	}
}

func skipWS(src []byte, i int) int {
	for i < len(src) {
		switch src[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	return i
}

// value writes the value at src[i] (no whitespace before it), whose first
// container, if any, is record r. It returns the offset just past the
// value and the record of the next container after it.
func (c *canon) value(dst []byte, i, r int) ([]byte, int, int) {
	src := c.src
	switch src[i] {
	case '{':
		return c.object(dst, i, r)
	case '[':
		return c.array(dst, i, r)
	case '"':
		j := stringEnd(src, i)
		return appendCanonicalString(dst, src[i:j]), j, r
	case 't':
		return append(dst, "true"...), i + 4, r
	case 'f':
		return append(dst, "false"...), i + 5, r
	case 'n':
		return append(dst, "null"...), i + 4, r
	}
	j := numberEnd(src, i)
	return appendCanonicalNumber(dst, src[i:j]), j, r
}

func (c *canon) array(dst []byte, i, r int) ([]byte, int, int) {
	src := c.src
	end, next := int(c.recs[r].end), int(c.recs[r].next)
	dst = append(dst, '[')
	i, r = skipWS(src, i+1), r+1
	for first := true; i < end; first = false {
		if !first {
			dst = append(dst, ',')
		}
		dst, i, r = c.value(dst, i, r)
		i = skipWS(src, i)
		if src[i] == ',' {
			i = skipWS(src, i+1)
		}
	}
	return append(dst, ']'), end + 1, next
}

func (c *canon) object(dst []byte, i, r int) ([]byte, int, int) {
	src := c.src
	end, next := int(c.recs[r].end), int(c.recs[r].next)
	base, keysBase := len(c.members), len(c.keys)
	i, r = skipWS(src, i+1), r+1
	sorted := true
	for i < end {
		m := member{key: i, dec: -1, rec: -1}
		m.keyEnd = stringEnd(src, i)
		if lit := src[i:m.keyEnd]; !plainKey(lit) {
			m.dec = len(c.keys)
			c.keys = appendDecoded(c.keys, lit)
			m.decEnd = len(c.keys)
		}
		i = skipWS(src, m.keyEnd)
		i = skipWS(src, i+1) // the colon
		m.val = i
		switch src[i] {
		case '{', '[':
			m.rec = r
			i = int(c.recs[r].end) + 1
			r = int(c.recs[r].next)
		case '"':
			i = stringEnd(src, i)
		case 't', 'n':
			i += 4
		case 'f':
			i += 5
		default:
			i = numberEnd(src, i)
		}
		m.valEnd = i
		if n := len(c.members); n > base && sorted && compareUTF16(c.keyOf(&c.members[n-1]), c.keyOf(&m)) >= 0 {
			sorted = false
		}
		c.members = append(c.members, m)
		i = skipWS(src, i)
		if src[i] == ',' {
			i = skipWS(src, i+1)
		}
	}
	ms := c.members[base:]
	if !sorted {
		slices.SortStableFunc(ms, func(a, b member) int { return compareUTF16(c.keyOf(&a), c.keyOf(&b)) })
		// Of equal keys, the last in the document wins.
		out := ms[:0]
		for k := range ms {
			if k+1 < len(ms) && compareUTF16(c.keyOf(&ms[k]), c.keyOf(&ms[k+1])) == 0 {
				continue
			}
			out = append(out, ms[k])
		}
		ms = out
	}
	dst = append(dst, '{')
	for k := range ms {
		// Writing a value may grow c.members: index, never hold a pointer.
		m := c.members[base+k]
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = appendCanonicalString(dst, src[m.key:m.keyEnd])
		dst = append(dst, ':')
		dst, _, _ = c.value(dst, m.val, m.rec)
	}
	c.members, c.keys = c.members[:base], c.keys[:keysBase]
	return append(dst, '}'), end + 1, next
}

// keyOf is the decoded key of m, as UTF-8.
func (c *canon) keyOf(m *member) []byte {
	if m.dec < 0 {
		return c.src[m.key+1 : m.keyEnd-1]
	}
	return c.keys[m.dec:m.decEnd]
}

// plainKey reports whether a string literal's body is its decoded value:
// no escapes and valid UTF-8.
func plainKey(lit []byte) bool {
	body := lit[1 : len(lit)-1]
	return bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body)
}

// compareUTF16 orders two UTF-8 strings by their UTF-16 code units, as
// RFC 8785 sorts keys. That is code point order except that a character
// above U+FFFF (two surrogates, from 0xD800) sorts before U+E000–U+FFFF.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	return int(firstUnit(ra)) - int(firstUnit(rb))
}

// firstUnit is the first UTF-16 code unit of r, scaled so that two
// characters with the same high surrogate still compare by code point.
func firstUnit(r rune) int64 {
	if r < 0x10000 {
		return int64(r) << 10
	}
	hi, lo := utf16.EncodeRune(r)
	return int64(hi)<<10 | int64(lo-0xDC00)
}

// numberEnd returns the offset just past the number literal at src[i].
func numberEnd(src []byte, i int) int {
	for i < len(src) {
		switch c := src[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
			continue
		}
		break
	}
	return i
}

// appendDecoded appends the value of the valid string literal lit as
// encoding/json decodes it: escapes resolved, a high surrogate escape
// followed by a low one joined, any other surrogate escape and every byte
// of invalid UTF-8 as U+FFFD.
func appendDecoded(dst, lit []byte) []byte { return appendChars(dst, lit, false) }

// appendCanonicalString appends the valid string literal lit with the
// minimal escapes of RFC 8785.
func appendCanonicalString(dst, lit []byte) []byte {
	if plainKey(lit) {
		// No escapes, valid UTF-8, and (being valid JSON) no control
		// characters: already canonical.
		return append(dst, lit...)
	}
	dst = append(dst, '"')
	return append(appendChars(dst, lit, true), '"')
}

// appendChars appends the characters of the string literal lit, decoded as
// appendDecoded says, each escaped as RFC 8785 says when escape is set.
func appendChars(dst, lit []byte, escape bool) []byte {
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); {
		r, size := rune(body[i]), 1
		switch {
		case r == '\\':
			r, size = decodeEscape(body[i:])
		case r >= utf8.RuneSelf:
			r, size = utf8.DecodeRune(body[i:]) // U+FFFD, 1 for a bad byte
		}
		i += size
		if escape {
			dst = appendEscaped(dst, r)
		} else {
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}

// decodeEscape decodes the escape that esc starts with (a backslash) and
// returns the character and the escape's length.
func decodeEscape(esc []byte) (rune, int) {
	switch esc[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r := hex4(esc[2:6])
		if !utf16.IsSurrogate(r) {
			return r, 6
		}
		if len(esc) >= 12 && esc[6] == '\\' && esc[7] == 'u' {
			if d := utf16.DecodeRune(r, hex4(esc[8:12])); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return rune(esc[1]), 2 // '"', '\\' or '/'
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendEscaped appends r as RFC 8785 writes it inside a string.
func appendEscaped(dst []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	switch {
	case r == '"' || r == '\\':
		return append(dst, '\\', byte(r))
	case r == '\b':
		return append(dst, '\\', 'b')
	case r == '\f':
		return append(dst, '\\', 'f')
	case r == '\n':
		return append(dst, '\\', 'n')
	case r == '\r':
		return append(dst, '\\', 'r')
	case r == '\t':
		return append(dst, '\\', 't')
	case r < 0x20:
		return append(dst, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
	}
	return utf8.AppendRune(dst, r)
}

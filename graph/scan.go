package graph

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// maxDepth is the deepest nesting accepted, the same limit encoding/json
// (and so both CLIs) enforce.
const maxDepth = 10000

// scanner validates JSON in one pass. It is hand-written because it is the
// whole per-POST cost of a state that barely changed: it checks strings eight
// bytes at a time and skips Terraform's indentation eight spaces at a time,
// several times faster than encoding/json's byte-at-a-time state machine.
//
// Optionally (emit) it appends the compact form of what it scans to out, and
// (track) checks that every whitespace run is exactly what the writer of the
// document's format would have put there, so a fragment can be copied
// verbatim when rendering instead of being re-indented.
type scanner struct {
	data []byte
	pos  int
	err  *SyntaxError
	esc  bool // the last string scanned had a backslash escape

	emit bool
	out  []byte
	seg  int // start of the bytes not yet copied to out

	track  bool
	indent bool // tracking Terraform's indented layout, else compact
	canon  bool // no whitespace mismatch seen yet
	base   int  // indent level of the tracked value's first line

	stack []byte
}

// ws skips whitespace and returns where the run started.
func (s *scanner) ws() int {
	p := s.pos
	if p >= len(s.data) || s.data[p] > ' ' {
		return p
	}
	return s.wsSlow(p)
}

func (s *scanner) wsSlow(p int) int {
	d := s.data
	i := p
	for i < len(d) {
		switch d[i] {
		case ' ':
			i++
			for i+8 <= len(d) && binary.LittleEndian.Uint64(d[i:]) == 0x2020202020202020 {
				i += 8
			}
			for i < len(d) && d[i] == ' ' {
				i++
			}
			continue
		case '\n', '\t', '\r':
			i++
			continue
		}
		break
	}
	s.pos = i
	if s.emit && i > p {
		s.out = append(s.out, d[s.seg:p]...)
		s.seg = i
	}
	return p
}

// wantNL records whether the whitespace run [from, s.pos) is the line break
// and indentation of a value at the given level.
func (s *scanner) wantNL(from, level int) {
	if !s.track || !s.canon {
		return
	}
	if !s.indent {
		s.canon = s.pos == from
		return
	}
	n := 2 * (s.base + level)
	if s.pos-from != n+1 || s.data[from] != '\n' {
		s.canon = false
		return
	}
	for _, c := range s.data[from+1 : s.pos] {
		if c != ' ' {
			s.canon = false
			return
		}
	}
}

// wantNone records whether the run [from, s.pos) is empty, as it must be
// before a ',' or ':' and inside '{}' or '[]'.
func (s *scanner) wantNone(from int) {
	if s.track && s.pos != from {
		s.canon = false
	}
}

// wantSpace records whether the run [from, s.pos) is what follows a ':'.
func (s *scanner) wantSpace(from int) {
	if !s.track {
		return
	}
	if s.indent {
		if s.pos-from != 1 || s.data[from] != ' ' {
			s.canon = false
		}
	} else if s.pos != from {
		s.canon = false
	}
}

// flush copies the pending bytes to out; call it at the end of an emitted
// value.
func (s *scanner) flush() {
	s.out = append(s.out, s.data[s.seg:s.pos]...)
	s.seg = s.pos
}

func (s *scanner) fail(at int, msg string) bool {
	if s.err == nil {
		s.err = &SyntaxError{Offset: int64(at), msg: msg}
	}
	return false
}

func (s *scanner) failEOF() bool { return s.fail(len(s.data), "unexpected end of JSON input") }

// failChar reports the byte at s.pos, or the end of input.
func (s *scanner) failChar(context string) bool {
	if s.pos >= len(s.data) {
		return s.failEOF()
	}
	return s.fail(s.pos, "invalid character "+quoteChar(s.data[s.pos])+" "+context)
}

func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	if c >= 0x80 {
		return "byte 0x" + strconv.FormatUint(uint64(c), 16)
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// value scans one JSON value starting at s.pos (whitespace already skipped)
// and leaves s.pos just after it. depth is the number of containers open
// around the value, level its indent level relative to s.base.
func (s *scanner) value(depth, level int) bool {
	d := s.data
	stack := s.stack[:0]
	for {
		if s.pos >= len(d) {
			return s.failEOF()
		}
		switch c := d[s.pos]; {
		case c == '{' || c == '[':
			if depth+len(stack)+1 > maxDepth {
				return s.fail(s.pos, "exceeded max depth")
			}
			s.pos++
			from := s.ws()
			if s.pos < len(d) && d[s.pos] == c+2 { // '{'+2 == '}', '['+2 == ']'
				s.wantNone(from)
				s.pos++
				break
			}
			stack = append(stack, c)
			s.wantNL(from, level+len(stack))
			if c == '{' && !s.member() {
				return false
			}
			continue
		case c == '"':
			if !s.str() {
				return false
			}
		case c == 't':
			if !s.lit("true") {
				return false
			}
		case c == 'f':
			if !s.lit("false") {
				return false
			}
		case c == 'n':
			if !s.lit("null") {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if !s.num() {
				return false
			}
		default:
			return s.failChar("looking for beginning of value")
		}
		// After a value: close containers until one continues.
		for {
			if len(stack) == 0 {
				s.stack = stack
				return true
			}
			from := s.ws()
			if s.pos >= len(d) {
				return s.failEOF()
			}
			c := d[s.pos]
			top := stack[len(stack)-1]
			if c == ',' {
				s.wantNone(from)
				s.pos++
				from = s.ws()
				s.wantNL(from, level+len(stack))
				if top == '{' && !s.member() {
					return false
				}
				break
			}
			if c == top+2 {
				s.wantNL(from, level+len(stack)-1)
				s.pos++
				stack = stack[:len(stack)-1]
				continue
			}
			if top == '{' {
				return s.failChar("after object key:value pair")
			}
			return s.failChar("after array element")
		}
	}
}

// member scans an object key, the colon and the whitespace after it, leaving
// s.pos at the member's value.
func (s *scanner) member() bool {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return s.failChar("looking for beginning of object key string")
	}
	if !s.str() {
		return false
	}
	return s.colon()
}

// colon scans the whitespace, ':' and whitespace after an object key.
func (s *scanner) colon() bool {
	from := s.ws()
	s.wantNone(from)
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return s.failChar("after object key")
	}
	s.pos++
	from = s.ws()
	s.wantSpace(from)
	return true
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special reports whether any byte of w is '"', '\\' or a control character:
// the bytes a string scan must stop at.
func special(w uint64) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	return (((q - lsb) &^ q) | ((b - lsb) &^ b) | ((w - lsb*0x20) &^ w)) & msb
}

// str scans a string literal at s.pos and sets s.esc when it has escapes.
func (s *scanner) str() bool {
	d := s.data
	i := s.pos + 1
	s.esc = false
	for {
		for i+8 <= len(d) && special(binary.LittleEndian.Uint64(d[i:])) == 0 {
			i += 8
		}
		for i < len(d) {
			if c := d[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
			i++
		}
		if i >= len(d) {
			return s.failEOF()
		}
		switch c := d[i]; {
		case c == '"':
			s.pos = i + 1
			return true
		case c == '\\':
			s.esc = true
			if i+1 >= len(d) {
				return s.failEOF()
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(d) {
						return s.failEOF()
					}
					if !isHex(d[k]) {
						s.pos = k
						return s.failChar("in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				s.pos = i + 1
				return s.failChar("in string escape code")
			}
		default:
			s.pos = i
			return s.failChar("in string literal")
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// lit scans the literal word at s.pos.
func (s *scanner) lit(word string) bool {
	d := s.data
	for k := 0; k < len(word); k++ {
		if s.pos >= len(d) {
			return s.failEOF()
		}
		if d[s.pos] != word[k] {
			return s.failChar("in literal " + word + " (expecting " + quoteChar(word[k]) + ")")
		}
		s.pos++
	}
	return true
}

// num scans a number literal at s.pos.
func (s *scanner) num() bool {
	d := s.data
	if d[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(d) {
		return s.failEOF()
	}
	switch c := d[s.pos]; {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.pos++
		s.digits()
	default:
		return s.failChar("in numeric literal")
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		if s.pos >= len(d) {
			return s.failEOF()
		}
		if c := d[s.pos]; c < '0' || c > '9' {
			return s.failChar("after decimal point in numeric literal")
		}
		s.digits()
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if s.pos >= len(d) {
			return s.failEOF()
		}
		if c := d[s.pos]; c < '0' || c > '9' {
			return s.failChar("in exponent of numeric literal")
		}
		s.digits()
	}
	return true
}

func (s *scanner) digits() {
	d := s.data
	for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
		s.pos++
	}
}

// end checks that only whitespace follows the top-level value.
func (s *scanner) end() bool {
	s.ws()
	if s.pos < len(s.data) {
		return s.failChar("after top-level value")
	}
	return true
}

// stringEnd returns the index just past the string literal starting at i in
// valid JSON src.
func stringEnd(src []byte, i int) int {
	i++
	for {
		for i+8 <= len(src) && special(binary.LittleEndian.Uint64(src[i:])) == 0 {
			i += 8
		}
		for i < len(src) {
			if c := src[i]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
			i++
		}
		if i >= len(src) {
			return len(src)
		}
		switch src[i] {
		case '"':
			return i + 1
		case '\\':
			i += 2
		default:
			i++
		}
	}
}

// plainString returns the contents of the string literal lit when it can
// be used as they are: no escapes and valid UTF-8. Otherwise ok is false and
// the literal must be decoded the way encoding/json does.
func plainString(lit []byte, esc bool) (string, bool) {
	body := lit[1 : len(lit)-1]
	if esc || !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

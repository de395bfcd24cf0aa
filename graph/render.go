package graph

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Render returns the state as the CLI that uses format f writes it.
//
// FormatIndent is Terraform's statefile writer byte for byte: the version 4
// document through json.MarshalIndent with a two-space indent, plus a
// newline. FormatCompact is OpenTofu's writer: the same document through
// json.Marshal, plus a newline. A resource's "module", "each" and "provider"
// are written only when set: Terraform always has a provider (its writer has
// no omitempty there), and OpenTofu leaves it out when each instance names
// its own, which Terraform's layout cannot otherwise express.
//
// Consecutive instances of one resource are written as one "resources"
// entry, so call Sort first for a state built out of order. Instance and
// output objects are written as they are (reindented for FormatIndent), in
// their writer's key order and escaping. An instance parsed from a document
// of format f whose bytes were already exactly what rendering gives is
// copied from that document instead, so rendering a freshly parsed document
// in its own format costs about a copy and gives back the same bytes.
//
// Objects must be valid JSON, as Parse and NewInstance guarantee. A lean
// state (see Lean) renders as nil.
func (s *State) Render(f Format) []byte {
	r := renderer{b: make([]byte, 0, s.sizeHint(f, math.MaxInt))}
	s.render(&r, f)
	if r.err != nil {
		return nil
	}
	return r.b
}

// RenderTo writes what Render(f) returns to w, a piece at a time, so that
// a large state is written without being built in memory first. It
// returns the bytes written and the first error of w, after which it
// stops.
func (s *State) RenderTo(w io.Writer, f Format) (int64, error) {
	// A small state's buffer is its size, not two chunks: a GET of one,
	// or the check of a POST, allocates a few kilobytes, not 64 KiB.
	r := renderer{b: make([]byte, 0, s.sizeHint(f, 2*renderChunk)), w: w}
	s.render(&r, f)
	return r.n, r.err
}

// RenderLeanTo is RenderIndexTo for a state whose instances' objects are
// elsewhere: object(i) gives instance i's, valid until its next call, and
// each instance is left lean (see Lean), its canonical hash computed, so
// that a large state is rendered and indexed holding one object at a time.
// An error of object stops it, and is returned.
func (s *State) RenderLeanTo(w io.Writer, f Format, object func(i int) ([]byte, error)) (int64, error) {
	r := renderer{b: make([]byte, 0, 2*renderChunk), w: w, index: true, object: object}
	s.render(&r, f)
	return r.n, r.err
}

// RenderIndexTo is RenderTo, and makes each instance know its rendering
// as the fragment a parse of the rendered document would find (its length
// and hashes, not its bytes): so that ParseWith of the next document, with
// s as its Prev, finds each unchanged instance by its bytes, and Lean may
// drop its object. It changes s's instances: s must not be in use
// elsewhere.
func (s *State) RenderIndexTo(w io.Writer, f Format) (int64, error) {
	r := renderer{b: make([]byte, 0, s.sizeHint(f, 2*renderChunk)), w: w, index: true}
	s.render(&r, f)
	return r.n, r.err
}

// RenderEqual reports whether Render(f) would return exactly doc, without
// building it: it compares piece by piece and stops at the first
// difference.
func (s *State) RenderEqual(f Format, doc []byte) bool { return s.RenderEqualDone(f, doc, nil) }

// RenderEqualDone is RenderEqual telling done, as ParseOptions.Done is
// told, how far it has compared doc.
func (s *State) RenderEqualDone(f Format, doc []byte, done func(from, to int)) bool {
	cw := compareWriter{want: doc, done: Progress{Done: done}}
	return s.renderEqual(f, &cw)
}

// RenderEqualAt is RenderEqual reading doc's bytes from at, which holds
// the same bytes (a file doc maps), where it compares them, and not
// touching doc's own memory (at nil: doc's memory, in place, as
// RenderEqual does, where a copy read from a bytes.Reader of it would
// only cost): an instance parsed from doc that rendering
// would copy from doc at that very place is doc's bytes, and is skipped,
// not compared. So a state parsed from a document costs, to be checked
// against it, its other bytes: the document's headers and layout, and what
// it does not copy.
func (s *State) RenderEqualAt(f Format, doc []byte, at io.ReaderAt) bool {
	cw := compareWriter{want: doc, src: at}
	return s.renderEqual(f, &cw)
}

func (s *State) renderEqual(f Format, cw *compareWriter) bool {
	r := renderer{b: make([]byte, 0, s.sizeHint(f, 2*renderChunk)), w: cw, doc: cw.want}
	s.render(&r, f)
	cw.done.Flush(cw.at)
	return r.err == nil && cw.at == len(cw.want)
}

// renderChunk is how much RenderTo builds before it writes.
const renderChunk = 32 << 10

// renderer is where a state renders to: its buffer b, which, when w is
// set, is written to w and emptied whenever it holds renderChunk bytes.
// With index set, each instance learns its fragment as rendered (see
// RenderIndexTo).
type renderer struct {
	b     []byte
	w     io.Writer
	n     int64
	err   error
	index bool
	// object gives the object of each instance, which is left lean (see
	// RenderLeanTo); nil when instances hold their own.
	object func(i int) ([]byte, error)
	// doc, when set, is the document w compares with (a compareWriter):
	// an instance's fragment that is doc's bytes where it goes is skipped.
	doc []byte
}

// instance appends instance i, in, in format f to b: its fragment when
// rendering its object gives it (or skips it, see copyFragment), else its
// object, lent by r.object when set; false once r has failed (ErrLean for
// an instance with neither).
func (r *renderer) instance(b []byte, i int, in *Instance, f Format) ([]byte, bool) {
	at := len(b)
	if !r.lend(i, in) {
		return b, false
	}
	switch {
	case in.copyable(f):
		var ok bool
		if b, ok = r.copyFragment(b, in); !ok {
			return b, false
		}
	case in.Object == nil:
		r.err = ErrLean
		return b, false
	case f == FormatIndent:
		b = appendIndent(b, in.Object, instanceLevel)
	default:
		b = append(b, in.Object...)
	}
	r.indexed(in, b, at, f)
	r.lent(in)
	return b, true
}

// copyFragment appends in's fragment (copyable) to b, or, when it is
// doc's own bytes at the place it goes, writes b and skips them.
func (r *renderer) copyFragment(b []byte, in *Instance) ([]byte, bool) {
	frag := in.fragment
	pos := r.n + int64(len(b))
	if r.doc == nil || r.index || len(frag) == 0 || pos+int64(len(frag)) > int64(len(r.doc)) || &frag[0] != &r.doc[pos] {
		return append(b, frag...), true
	}
	b, ok := r.flush(b, true)
	if !ok {
		return b, false
	}
	if !r.w.(*compareWriter).skip(len(frag)) {
		r.err = errDiffers
		return b, false
	}
	r.n += int64(len(frag))
	return b, true
}

// lend gives in its object from r.object, when set, for the time it is
// rendered (see lent); false when r.object fails.
func (r *renderer) lend(i int, in *Instance) bool {
	if r.object == nil {
		return true
	}
	obj, err := r.object(i)
	if err != nil {
		r.err = err
		return false
	}
	in.Object, in.objFirst = obj, nil
	return true
}

// lent makes in lean again after it was rendered with the object lend
// gave it, knowing its canonical hash.
func (r *renderer) lent(in *Instance) {
	if r.object != nil {
		in.canon = canonicalHashOf(in)
		in.Object, in.objFirst = nil, nil
	}
}

// indexed makes in know b[at:], its rendering in format f, as its
// fragment, when r indexes: what ParseWith finds it again by in the next
// document. b is the buffer being rendered into, whose earlier bytes r.n
// counts.
func (r *renderer) indexed(in *Instance, b []byte, at int, f Format) {
	if !r.index {
		return
	}
	frag := b[at:]
	in.fragHash = maphash.Bytes(fragmentSeed, frag) ^ headerHash(&in.Resource)
	in.fragSum = maphash.Bytes(sumSeed, frag)
	in.fragLen = len(frag)
	in.fragOff = r.n + int64(at)
	in.fragmentFormat, in.canonical, in.fragment = f, true, nil
	if len(in.Object) > 0 {
		in.objFirst = &in.Object[0]
	}
}

// flush writes b to w once it holds renderChunk bytes, or when all is
// set; it reports false once w has failed.
func (r *renderer) flush(b []byte, all bool) ([]byte, bool) {
	if r.err != nil {
		return b, false
	}
	if r.w == nil || len(b) < renderChunk && !all {
		return b, true
	}
	n, err := r.w.Write(b)
	r.n += int64(n)
	r.err = err
	return b[:0], err == nil
}

// errDiffers is compareWriter's error at the first difference.
var errDiffers = errors.New("graph: the rendering differs")

// compareWriter compares what is written to it with want, whose bytes it
// reads from src when set (a window at a time), and skips what the
// renderer knows to be want's own bytes.
type compareWriter struct {
	want []byte
	at   int
	done Progress
	src  io.ReaderAt
	// win holds want's bytes from winAt on, read from src.
	win   []byte
	winAt int
}

// compareWindow is how much of want a compareWriter reads from src at once.
const compareWindow = 256 << 10

func (c *compareWriter) Write(p []byte) (int, error) {
	if len(p) > len(c.want)-c.at {
		return 0, errDiffers
	}
	if c.src == nil {
		if string(p) != string(c.want[c.at:c.at+len(p)]) {
			return 0, errDiffers
		}
	} else {
		for q := p; len(q) > 0; {
			if c.at < c.winAt || c.at >= c.winAt+len(c.win) {
				n := min(max(compareWindow, len(q)), len(c.want)-c.at)
				c.win = slices.Grow(c.win[:0], n)[:n]
				if k, err := c.src.ReadAt(c.win, int64(c.at)); k < n {
					return 0, fmt.Errorf("read the document back: %w", err)
				}
				c.winAt = c.at
			}
			k := min(len(q), c.winAt+len(c.win)-c.at)
			if string(q[:k]) != string(c.win[c.at-c.winAt:c.at-c.winAt+k]) {
				return 0, errDiffers
			}
			q = q[k:]
			c.at += k
		}
		return len(p), nil
	}
	c.at += len(p)
	c.done.At(c.at)
	return len(p), nil
}

// skip passes over n bytes of want without comparing them.
func (c *compareWriter) skip(n int) bool {
	if n > len(c.want)-c.at {
		return false
	}
	c.at += n
	return true
}

func (s *State) render(r *renderer, f Format) {
	if f == FormatCompact {
		r.b = s.renderCompact(r)
	} else {
		r.b = s.renderIndent(r)
	}
	r.b, _ = r.flush(r.b, true)
}

// sizeHint is about the size of s rendered in format f, or most once it is
// more than that.
func (s *State) sizeHint(f Format, most int) int {
	n := 256 + len(s.CheckResults)*2
	for i := range s.Outputs {
		n += 16 + len(s.Outputs[i].Name) + 2*len(s.Outputs[i].Object)
	}
	for i := range s.Instances {
		in := &s.Instances[i]
		switch {
		case f == FormatCompact:
			n += len(in.Object) + 1
		case in.copyable(f):
			n += len(in.fragment) + 10
		default:
			n += 2*len(in.Object) + 10
		}
		if i == 0 || in.Resource != s.Instances[i-1].Resource {
			r := &in.Resource
			n += 160 + len(r.Module) + len(r.Type) + len(r.Name) + len(r.Provider)
		}
		if n >= most {
			return most
		}
	}
	return min(n, most)
}

func (s *State) renderIndent(r *renderer) []byte {
	b := r.b
	b = append(b, "{\n  \"version\": 4,\n  \"terraform_version\": "...)
	b = appendString(b, s.TerraformVersion)
	b = append(b, ",\n  \"serial\": "...)
	b = strconv.AppendUint(b, s.Serial, 10)
	b = append(b, ",\n  \"lineage\": "...)
	b = appendString(b, s.Lineage)
	b = append(b, ",\n  \"outputs\": {"...)
	for i := range s.Outputs {
		o := &s.Outputs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendString(b, o.Name)
		b = append(b, ": "...)
		b = appendIndent(b, o.Object, outputLevel)
	}
	if len(s.Outputs) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "},\n  \"resources\": ["...)
	for i := range s.Instances {
		in := &s.Instances[i]
		if i == 0 || in.Resource != s.Instances[i-1].Resource {
			if i > 0 {
				b = append(b, "\n      ]\n    },"...)
			}
			r := &in.Resource
			b = append(b, "\n    {\n"...)
			if r.Module != "" {
				b = append(b, "      \"module\": "...)
				b = appendString(b, r.Module)
				b = append(b, ",\n"...)
			}
			b = append(b, "      \"mode\": "...)
			b = appendString(b, r.Mode)
			b = append(b, ",\n      \"type\": "...)
			b = appendString(b, r.Type)
			b = append(b, ",\n      \"name\": "...)
			b = appendString(b, r.Name)
			if r.Each != "" {
				b = append(b, ",\n      \"each\": "...)
				b = appendString(b, r.Each)
			}
			if r.Provider != "" {
				b = append(b, ",\n      \"provider\": "...)
				b = appendString(b, r.Provider)
			}
			b = append(b, ",\n      \"instances\": [\n        "...)
		} else {
			b = append(b, ",\n        "...)
		}
		var ok bool
		if b, ok = r.instance(b, i, in, FormatIndent); !ok {
			return b
		}
		if b, ok = r.flush(b, false); !ok {
			return b
		}
	}
	if len(s.Instances) > 0 {
		b = append(b, "\n      ]\n    }\n  "...)
	}
	b = append(b, "],\n  \"check_results\": "...)
	if s.CheckResults == nil {
		b = append(b, "null"...)
	} else {
		b = appendIndent(b, s.CheckResults, checksLevel)
	}
	return append(b, "\n}\n"...)
}

func (s *State) renderCompact(r *renderer) []byte {
	b := r.b
	b = append(b, `{"version":4,"terraform_version":`...)
	b = appendString(b, s.TerraformVersion)
	b = append(b, `,"serial":`...)
	b = strconv.AppendUint(b, s.Serial, 10)
	b = append(b, `,"lineage":`...)
	b = appendString(b, s.Lineage)
	b = append(b, `,"outputs":{`...)
	for i := range s.Outputs {
		o := &s.Outputs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, o.Name)
		b = append(b, ':')
		b = append(b, o.Object...)
	}
	b = append(b, `},"resources":[`...)
	for i := range s.Instances {
		in := &s.Instances[i]
		if i == 0 || in.Resource != s.Instances[i-1].Resource {
			if i > 0 {
				b = append(b, "]},"...)
			}
			r := &in.Resource
			b = append(b, '{')
			if r.Module != "" {
				b = append(b, `"module":`...)
				b = appendString(b, r.Module)
				b = append(b, ',')
			}
			b = append(b, `"mode":`...)
			b = appendString(b, r.Mode)
			b = append(b, `,"type":`...)
			b = appendString(b, r.Type)
			b = append(b, `,"name":`...)
			b = appendString(b, r.Name)
			if r.Each != "" {
				b = append(b, `,"each":`...)
				b = appendString(b, r.Each)
			}
			if r.Provider != "" {
				b = append(b, `,"provider":`...)
				b = appendString(b, r.Provider)
			}
			b = append(b, `,"instances":[`...)
		} else {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = r.instance(b, i, in, FormatCompact); !ok {
			return b
		}
		if b, ok = r.flush(b, false); !ok {
			return b
		}
	}
	if len(s.Instances) > 0 {
		b = append(b, "]}"...)
	}
	b = append(b, `],"check_results":`...)
	if s.CheckResults == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, s.CheckResults...)
	}
	return append(b, "}\n"...)
}

// appendString appends s as a JSON string literal exactly as encoding/json
// writes it, which is how both CLIs write every string: HTML-safe (<, > and &
// as \u003c, \u003e, \u0026), U+2028 and U+2029 escaped, invalid UTF-8 as
// \ufffd, and control characters as \b, \f, \n, \r, \t or \u00XX.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const spaces = "                                                                " // 64

func appendNewline(b []byte, level int) []byte {
	b = append(b, '\n')
	for n := 2 * level; n > 0; {
		k := min(n, len(spaces))
		b = append(b, spaces[:k]...)
		n -= k
	}
	return b
}

// appendIndent appends the valid JSON value src reindented exactly as
// json.Indent(dst, src, prefix, "  ") would, with prefix being level
// two-space indents: the first line unprefixed, nested lines one indent
// deeper per level, empty objects and arrays as {} and []. Whitespace in src
// is dropped.
func appendIndent(b, src []byte, level int) []byte {
	depth := level
	needIndent := false
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			b = appendNewline(b, depth)
		}
		switch c {
		case '"':
			j := stringEnd(src, i)
			b = append(b, src[i:j]...)
			i = j
			continue
		case '{', '[':
			needIndent = true
			b = append(b, c)
		case ',':
			b = append(b, c)
			b = appendNewline(b, depth)
		case ':':
			b = append(b, ':', ' ')
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				b = appendNewline(b, depth)
			}
			b = append(b, c)
		default:
			j := i + 1
			for j < len(src) && !isDelim(src[j]) {
				j++
			}
			b = append(b, src[i:j]...)
			i = j
			continue
		}
		i++
	}
	return b
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// Sort puts the state in the order Terraform writes it: instances by
// resource (module, mode, type, name), then by index key (no key, then
// integer keys by value, then string keys), then current before deposed
// objects by deposed key; outputs by name. It is stable, and cheap on a
// state that is already sorted.
func (s *State) Sort() {
	if !slices.IsSortedFunc(s.Instances, compareInstances) {
		slices.SortStableFunc(s.Instances, compareInstances)
	}
	byName := func(a, b Output) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(s.Outputs, byName) {
		slices.SortStableFunc(s.Outputs, byName)
	}
}

func compareInstances(a, b Instance) int { return a.Compare(&b) }

// Compare orders in and o as Sort does: it is 0 exactly when they have one
// ID (address and deposed key).
func (in *Instance) Compare(o *Instance) int {
	a, b := in, o
	ra, rb := &a.Resource, &b.Resource
	if c := strings.Compare(ra.Module, rb.Module); c != 0 {
		return c
	}
	if c := strings.Compare(ra.Mode, rb.Mode); c != 0 {
		return c
	}
	if c := strings.Compare(ra.Type, rb.Type); c != 0 {
		return c
	}
	if c := strings.Compare(ra.Name, rb.Name); c != 0 {
		return c
	}
	if c := compareKeys(a.Key, b.Key); c != 0 {
		return c
	}
	return strings.Compare(a.Deposed, b.Deposed)
}

// compareKeys orders index keys as Terraform does: no key, then integers,
// then strings.
func compareKeys(a, b IndexKey) int {
	if a.Kind != b.Kind {
		return int(a.Kind) - int(b.Kind)
	}
	switch a.Kind {
	case IntKey:
		switch {
		case a.Int < b.Int:
			return -1
		case a.Int > b.Int:
			return 1
		}
	case StringKey:
		return strings.Compare(a.Str, b.Str)
	}
	return 0
}

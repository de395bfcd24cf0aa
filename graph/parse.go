package graph

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"unicode/utf8"

	"github.com/kilolock/kilolock/internal/arena"
)

// Parse reads a tfstate version 4 document as Terraform writes it (indented)
// or as OpenTofu writes it (compact). Every field of every instance object is
// kept, in the writer's key order, in Instance.Object; Instances and Outputs
// are in document order.
//
// Errors: malformed JSON is a *SyntaxError; OpenTofu's client-side
// encrypted envelope is ErrEncrypted, and any other document with a
// top-level "encryption_version" an *EncryptionError; a "version" other
// than 4 is a
// *VersionError; a missing or empty lineage is ErrNoLineage; anything else
// that is not a valid version 4 state (a field of the wrong type, a
// duplicate instance) is a *FieldError. Parse never panics.
func Parse(data []byte) (*State, error) { return parse(data, nil) }

// ParseReusing is Parse for a document that is mostly the same as the one
// prev was parsed from, such as the next POST of the same state. Its result
// is identical to Parse(data); the difference is cost. An instance whose
// bytes in data (and resource header) are byte-identical to one of prev's is
// taken from prev instead of being compacted and hashed again, so beyond one
// validating scan of data the work is proportional to what changed. An
// instance of prev that was not parsed from a document of data's layout
// (one a store loaded) is found once the new instance is compacted, by its
// hash, and gives it its Object: the work is Parse's, but the result holds
// one copy of each unchanged object, prev's. prev may be nil. prev is not
// modified.
//
// The result refers to data (see Render); data must not be modified
// afterwards.
func ParseReusing(data []byte, prev *State) (*State, error) { return parse(data, prev) }

// ParseOptions are ParseWith's.
type ParseOptions struct {
	// Prev is the state of a document mostly the same as data, whose
	// unchanged instances the result takes (see ParseReusing); nil for
	// none.
	Prev *State
	// Done, when set, is told which bytes of data the parse has read and
	// will not read again soon, a megabyte or more at a time, in
	// document order: data may map a file whose pages the caller gives
	// back as the parse moves on (they are read again if needed). The
	// result still refers to data, as Parse's does.
	Done func(from, to int)
	// Lean keeps no instance objects: each instance whose fragment is
	// exactly what rendering its object gives is left lean (see
	// State.Lean), its object read again from its fragment when needed
	// (Instance.ObjectFrom), so that a large first write does not hold
	// its objects. It renders (copying its fragment) while data lives.
	Lean bool
	// Envelope, when not nil, receives the clear part of a client-side
	// encrypted state: when the parse returns ErrEncrypted, *Envelope is
	// what the envelope says (see Envelope); otherwise it is left alone.
	Envelope *Envelope
	// Spelled, for a Lean parse without a Prev that knows these bytes,
	// is what a store kept of earlier versions' instances by their
	// spelling (see Instance.Spelling): an instance whose spelling is
	// among them takes its Hash and canonical hash from there instead of
	// being compacted and hashed, as one found in Prev is. The result is
	// as without it.
	Spelled map[Hash]Spelled
}

// Spelled is what a store keeps of a lean instance besides its object,
// by its spelling (Instance.Spelling): its Hash and its canonical hash.
type Spelled struct {
	Hash, Canonical Hash
}

// ParseWith is ParseReusing(data, o.Prev), telling o.Done how far it has
// read, and with o.Lean keeping no objects. When Prev is lean, the
// instances taken from it are lean too (but for their fragment in data):
// their Object is nil.
func ParseWith(data []byte, o ParseOptions) (*State, error) {
	p := &parser{st: &State{Version: 4}, prev: o.Prev, done: Progress{Done: o.Done}, lean: o.Lean, envOut: o.Envelope, spelled: o.Spelled}
	return p.parse(data)
}

// fragmentSeed and sumSeed seed the hashes that find reusable instances
// (two independent 64-bit hashes of each fragment: Instance.fragHash and
// fragSum). They are shared by every State of the process, so a state
// parsed earlier can be matched, and random, so no document can be made to
// collide with another on purpose.
var (
	fragmentSeed = maphash.MakeSeed()
	sumSeed      = maphash.MakeSeed()
)

// Field names; encoding/json, which both CLIs read state with, matches them
// case-insensitively, and so does Parse.
var (
	topFields      = []string{"version", "terraform_version", "serial", "lineage", "outputs", "resources", "check_results", "encryption_version"}
	resourceFields = []string{"module", "mode", "type", "name", "each", "provider", "instances"}
	instanceFields = []string{"index_key", "status", "deposed", "dependencies"}
)

const (
	fVersion = iota
	fTerraformVersion
	fSerial
	fLineage
	fOutputs
	fResources
	fCheckResults
	fEncryptionVersion
)

const (
	rModule = iota
	rMode
	rType
	rName
	rEach
	rProvider
	rInstances
)

// Where instances and outputs sit in the indented layout.
const (
	instanceDepth = 4 // containers around an instance object
	instanceLevel = 4 // indent level of its first line
	outputLevel   = 2
	checksLevel   = 1
)

// span is a value's position in the document; end is 0 when absent.
type span struct{ start, end int }

func (sp span) bytes(d []byte) []byte { return d[sp.start:sp.end] }

// head locates the instance fields Parse interprets.
type head struct{ key, status, deposed, deps span }

// pending is an instance of the resource being scanned: resource headers
// may follow "instances", so instances are finished with their resource.
type pending struct {
	start, end int
	index      int
	scanned    bool // obj, canon and head are set
	// hashed: rawHash (the fragment's hash before its header's) and sum
	// are set, by the guess that skipped validating it (see skipKnown).
	hashed       bool
	rawHash, sum uint64
	canon        bool
	obj          []byte
	head         head
	spelling     Hash // of a lean instance
}

// instanceID is what makes an instance unique in a state: its address and
// deposed key.
type instanceID struct {
	module, mode, typ, name string
	key                     IndexKey
	deposed                 string
}

func idOf(in *Instance) instanceID {
	r := &in.Resource
	return instanceID{r.Module, r.Mode, r.Type, r.Name, in.Key, in.Deposed}
}

type parser struct {
	s      scanner
	st     *State
	format Format

	prev     *State
	reuse    bool
	prevIdx  map[uint64]int32
	prevNext []int32
	prevObjs map[Hash]int32 // prev's instances that know no fragment, by Hash
	prevOuts map[string]int
	// guess is the instance of prev the next one in the document is
	// likely to be (the one after the last found there): see skipKnown.
	guess int

	notObject   error
	env         envelope
	envOut      *Envelope // ParseOptions.Envelope
	haveVersion bool
	version     int64
	versionErr  error
	fieldErr    error
	failed      bool // a field error was seen: only validate from now on

	pend     []pending
	ids      map[uint64]int32 // ID hash → index in st.Instances
	interned map[string]string
	outIdx   map[string]int
	scratch  []byte
	// arena holds the state's objects, packed into shared chunks and never
	// left pointing into the document, so a state does not keep old
	// documents alive through the instances it reuses.
	arena arena.Arena
	// done tells ParseOptions.Done how far the parse has read.
	done Progress
	// lean is ParseOptions.Lean.
	lean bool
	// spelled is ParseOptions.Spelled.
	spelled map[Hash]Spelled
}

func parse(data []byte, prev *State) (*State, error) {
	p := &parser{st: &State{Version: 4}, prev: prev}
	return p.parse(data)
}

func (p *parser) parse(data []byte) (*State, error) {
	p.s.data = data
	ok := p.document()
	p.done.Flush(p.s.pos)
	if !ok {
		return nil, p.s.err
	}
	switch {
	case p.notObject != nil:
		return nil, p.notObject
	case p.env.marked:
		if reason := p.env.departure(); reason != "" {
			return nil, &EncryptionError{Reason: reason}
		}
		if p.envOut != nil {
			p.env.clear(p.st, p.envOut)
		}
		return nil, ErrEncrypted
	case p.versionErr != nil:
		return nil, p.versionErr
	case !p.haveVersion:
		return nil, &FieldError{Path: "version", Reason: "missing: a state file must say which format version it is"}
	case p.version != 4:
		v := p.version
		if v > math.MaxInt32 || v < math.MinInt32 {
			return nil, &FieldError{Path: "version", Reason: fmt.Sprintf("unsupported state format version %d", v)}
		}
		return nil, &VersionError{Version: int(v)}
	case p.fieldErr != nil:
		return nil, p.fieldErr
	case p.st.Lineage == "":
		return nil, ErrNoLineage
	}
	return p.st, nil
}

// fieldf records the first field error; from then on the parser only
// validates the rest of the document, so that a syntax error later on
// still wins.
func (p *parser) fieldf(at int, reason, path string, args ...any) {
	if p.fieldErr == nil {
		if len(args) > 0 {
			path = fmt.Sprintf(path, args...)
		}
		p.fieldErr = &FieldError{Path: path, Offset: int64(at), Reason: reason}
	}
	p.failed = true
}

func (p *parser) peek() byte {
	if p.s.pos < len(p.s.data) {
		return p.s.data[p.s.pos]
	}
	return 0
}

// key scans an object key at s.pos and the colon after it, and returns the
// index of the name in names it matches, or -1.
func (p *parser) key(names []string) (int, []byte, bool) {
	s := &p.s
	if p.peek() != '"' {
		return -1, nil, s.failChar("looking for beginning of object key string")
	}
	start := s.pos
	if !s.str() {
		return -1, nil, false
	}
	lit := s.data[start:s.pos]
	esc := s.esc
	if !s.colon() {
		return -1, nil, false
	}
	return matchKey(lit, esc, names), lit, true
}

// matchKey matches a key literal the way encoding/json matches struct
// fields: exactly, else case-insensitively (Unicode simple folding).
func matchKey(lit []byte, esc bool, names []string) int {
	body := lit[1 : len(lit)-1]
	if esc {
		body = []byte(decodeString(lit))
	}
	for i, n := range names {
		if string(body) == n {
			return i
		}
	}
	for i, n := range names {
		if bytes.EqualFold(body, []byte(n)) {
			return i
		}
	}
	return -1
}

// decodeString decodes a valid string literal as encoding/json does,
// replacing invalid UTF-8 with U+FFFD.
func decodeString(lit []byte) string {
	body := lit[1 : len(lit)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(lit, &s) // cannot fail: lit is a valid string literal
	return s
}

// next scans the whitespace and ',' or close after an object member or
// array element; more is false at the close.
func (p *parser) next(close byte) (more, ok bool) {
	s := &p.s
	s.ws()
	switch p.peek() {
	case ',':
		s.pos++
		s.ws()
		return true, true
	case close:
		s.pos++
		return false, true
	}
	if close == '}' {
		return false, s.failChar("after object key:value pair")
	}
	return false, s.failChar("after array element")
}

// open scans the '{' or '[' at s.pos and the whitespace after it; empty is
// true when the container closed right away.
func (p *parser) open() (empty bool) {
	s := &p.s
	c := s.data[s.pos]
	s.pos++
	s.ws()
	if p.peek() == c+2 {
		s.pos++
		return true
	}
	return false
}

func (p *parser) document() bool {
	s := &p.s
	s.ws()
	if s.pos >= len(s.data) {
		return s.failEOF()
	}
	if s.data[s.pos] != '{' {
		at := s.pos
		if !s.value(0, 0) {
			return false
		}
		p.notObject = &FieldError{Path: "(document)", Offset: int64(at), Reason: "a state file is a JSON object"}
		return s.end()
	}
	s.pos++
	from := s.ws()
	p.format = FormatCompact
	if s.pos > from {
		p.format = FormatIndent
	}
	p.st.Format = p.format
	p.setupReuse()
	if p.peek() == '}' {
		s.pos++
		return s.end()
	}
	for {
		f, lit, ok := p.key(topFields)
		if !ok {
			return false
		}
		at := s.pos
		if !p.topField(f) {
			return false
		}
		p.env.note(f, lit, s.data[at:s.pos])
		more, ok := p.next('}')
		if !ok {
			return false
		}
		if !more {
			return s.end()
		}
	}
}

func (p *parser) topField(f int) bool {
	s := &p.s
	at := s.pos
	switch f {
	case fVersion:
		if p.peek() == 'n' {
			return s.lit("null")
		}
		if !s.value(1, 1) {
			return false
		}
		n, ok := parseInt(s.data[at:s.pos])
		if !ok {
			p.versionErr = &FieldError{Path: "version", Offset: int64(at), Reason: fmt.Sprintf("%.40s is not an integer format version", s.data[at:s.pos])}
			return true
		}
		p.haveVersion, p.version, p.versionErr = true, n, nil
		return true
	case fTerraformVersion:
		return p.stringField(&p.st.TerraformVersion, -1, "terraform_version")
	case fSerial:
		if p.peek() == 'n' {
			return s.lit("null")
		}
		if !s.value(1, 1) {
			return false
		}
		n, ok := parseUint(s.data[at:s.pos])
		if !ok {
			p.fieldf(at, "must be a non-negative integer", "serial")
			return true
		}
		p.st.Serial = n
		return true
	case fLineage:
		return p.stringField(&p.st.Lineage, -1, "lineage")
	case fOutputs:
		return p.outputs()
	case fResources:
		// A repeated key replaces the list, as in encoding/json.
		if len(p.st.Instances) > 0 {
			p.st.Instances, p.ids = nil, nil
		}
		return p.resources()
	case fCheckResults:
		switch p.peek() {
		case 'n':
			p.st.CheckResults = nil
			return s.lit("null")
		case '[':
			if p.failed {
				return s.value(1, 1)
			}
			obj, ok := p.compact(1, checksLevel)
			if ok {
				p.st.CheckResults = p.arena.Keep(obj)
			}
			return ok
		}
		if !s.value(1, 1) {
			return false
		}
		p.fieldf(at, "must be an array or null", "check_results")
		return true
	}
	return s.value(1, 1)
}

// stringField scans a string or null into *dst (null leaves it as it is,
// as encoding/json does). The field is named by the index of its resource
// (-1 for a top-level field) and its name, formatted only for an error.
func (p *parser) stringField(dst *string, ri int, name string) bool {
	s := &p.s
	at := s.pos
	switch p.peek() {
	case '"':
		if !s.str() {
			return false
		}
		lit := s.data[at:s.pos]
		if v, ok := plainString(lit, s.esc); ok {
			*dst = v
		} else {
			*dst = decodeString(lit)
		}
		return true
	case 'n':
		return s.lit("null")
	}
	if !s.value(1, 1) {
		return false
	}
	if ri < 0 {
		p.fieldf(at, "must be a string", name)
	} else {
		p.fieldf(at, "must be a string", "resources[%d].%s", ri, name)
	}
	return true
}

// internField is stringField for values that repeat across resources
// (modes, types, providers, modules): one string each per parse.
func (p *parser) internField(dst *string, ri int, name string) bool {
	s := &p.s
	at := s.pos
	if p.peek() != '"' {
		return p.stringField(dst, ri, name)
	}
	if !s.str() {
		return false
	}
	lit := s.data[at:s.pos]
	if v, ok := p.interned[string(lit)]; ok {
		*dst = v
		return true
	}
	v := decodeString(lit)
	if p.interned == nil {
		p.interned = make(map[string]string)
	}
	p.interned[string(lit)] = v
	*dst = v
	return true
}

// compact scans the value at s.pos and returns its compact form in scratch
// space (valid until the next call).
func (p *parser) compact(depth, level int) ([]byte, bool) {
	s := &p.s
	s.emit, s.out, s.seg = true, p.scratch[:0], s.pos
	ok := s.value(depth, level)
	s.flush()
	p.scratch, s.emit = s.out, false
	return s.out, ok
}

func (p *parser) outputs() bool {
	s := &p.s
	at := s.pos
	switch p.peek() {
	case 'n':
		return s.lit("null")
	case '{':
	default:
		if !s.value(1, 1) {
			return false
		}
		p.fieldf(at, "must be an object", "outputs")
		return true
	}
	if p.open() {
		return true
	}
	for {
		if p.peek() != '"' {
			return s.failChar("looking for beginning of object key string")
		}
		kstart := s.pos
		if !s.str() {
			return false
		}
		lit := s.data[kstart:s.pos]
		if !s.colon() {
			return false
		}
		vat := s.pos
		switch {
		case p.failed:
			if !s.value(2, outputLevel) {
				return false
			}
		case p.peek() != '{':
			if !s.value(2, outputLevel) {
				return false
			}
			p.fieldf(vat, "an output must be an object", "outputs[%s]", lit)
		default:
			obj, ok := p.compact(2, outputLevel)
			if !ok {
				return false
			}
			p.addOutput(decodeString(lit), obj)
		}
		more, ok := p.next('}')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

// addOutput adds or (a duplicate name, where encoding/json keeps the last)
// replaces an output. An output equal to prev's keeps prev's bytes and hash.
func (p *parser) addOutput(name string, obj []byte) {
	var out Output
	if j, ok := p.prevOuts[name]; ok && bytes.Equal(p.prev.Outputs[j].Object, obj) {
		out = p.prev.Outputs[j]
		out.Name = name
	} else {
		out = NewOutput(name, p.arena.Keep(obj))
	}
	if p.outIdx == nil {
		p.outIdx = make(map[string]int)
	}
	if j, ok := p.outIdx[name]; ok {
		p.st.Outputs[j] = out
		return
	}
	p.outIdx[name] = len(p.st.Outputs)
	p.st.Outputs = append(p.st.Outputs, out)
}

func (p *parser) resources() bool {
	s := &p.s
	at := s.pos
	switch p.peek() {
	case 'n':
		return s.lit("null")
	case '[':
	default:
		if !s.value(1, 1) {
			return false
		}
		p.fieldf(at, "must be an array", "resources")
		return true
	}
	if p.open() {
		return true
	}
	for ri := 0; ; ri++ {
		if !p.resource(ri) {
			return false
		}
		p.done.At(s.pos)
		more, ok := p.next(']')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

func (p *parser) resource(ri int) bool {
	s := &p.s
	at := s.pos
	if p.peek() != '{' {
		if !s.value(2, 2) {
			return false
		}
		p.fieldf(at, "a resource must be an object", "resources[%d]", ri)
		return true
	}
	var r Resource
	p.pend = p.pend[:0]
	modeAt := -1
	if !p.open() {
		for {
			f, _, ok := p.key(resourceFields)
			if !ok {
				return false
			}
			switch f {
			case rModule:
				ok = p.internField(&r.Module, ri, "module")
			case rMode:
				modeAt = s.pos
				ok = p.internField(&r.Mode, ri, "mode")
			case rType:
				ok = p.internField(&r.Type, ri, "type")
			case rName:
				ok = p.stringField(&r.Name, ri, "name")
			case rEach:
				ok = p.internField(&r.Each, ri, "each")
			case rProvider:
				ok = p.internField(&r.Provider, ri, "provider")
			case rInstances:
				// A repeated key replaces the list, as in encoding/json.
				p.pend = p.pend[:0]
				ok = p.instances(ri)
			default:
				ok = s.value(3, 3)
			}
			if !ok {
				return false
			}
			more, ok := p.next('}')
			if !ok {
				return false
			}
			if !more {
				break
			}
		}
	}
	if p.failed {
		return true
	}
	if r.Mode != "managed" && r.Mode != "data" {
		if modeAt < 0 {
			modeAt = at
		}
		p.fieldf(modeAt, fmt.Sprintf("mode %q is neither \"managed\" nor \"data\"", r.Mode), "resources[%d].mode", ri)
		return true
	}
	p.finishResource(ri, &r)
	return true
}

func (p *parser) instances(ri int) bool {
	s := &p.s
	at := s.pos
	switch p.peek() {
	case 'n':
		return s.lit("null")
	case '[':
	default:
		if !s.value(3, 3) {
			return false
		}
		p.fieldf(at, "must be an array", "resources[%d].instances", ri)
		return true
	}
	if p.open() {
		return true
	}
	for ii := 0; ; ii++ {
		at := s.pos
		switch {
		case p.failed:
			if !s.value(instanceDepth, 0) {
				return false
			}
		case p.peek() != '{':
			if !s.value(instanceDepth, 0) {
				return false
			}
			p.fieldf(at, "an instance must be an object", "resources[%d].instances[%d]", ri, ii)
		case p.reuse:
			// The hot path: validate only; most instances are found in prev,
			// and those spelled as the one guessed need no validating.
			pd := pending{start: at, index: ii}
			if !p.skipKnown(&pd) && !s.value(instanceDepth, 0) {
				return false
			}
			pd.end = s.pos
			p.pend = append(p.pend, pd)
		default:
			pd := pending{start: at, index: ii, scanned: true}
			var ok bool
			pd.head, pd.canon, ok = p.scanInstance()
			if !ok {
				return false
			}
			pd.end = s.pos
			pd.obj = p.arena.Keep(s.out)
			p.pend = append(p.pend, pd)
		}
		// Within a resource of many instances too: finishResource
		// reads their bytes once more, telling Done again as it goes.
		p.done.At(s.pos)
		more, ok := p.next(']')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

// scanInstance scans the instance object at s.pos, leaving its compact form
// in s.out, and reports where its interpreted fields are and whether it is
// canonical: exactly what rendering its compact form in the document's
// format gives back.
func (p *parser) scanInstance() (head, bool, bool) {
	s := &p.s
	s.emit, s.out, s.seg = true, p.scratch[:0], s.pos
	s.track, s.canon, s.indent, s.base = true, true, p.format == FormatIndent, instanceLevel
	h, ok := s.instance(instanceDepth)
	s.flush()
	p.scratch = s.out
	canon := s.canon
	s.emit, s.track = false, false
	return h, canon, ok
}

// instance scans an instance object at s.pos (a '{'), depth containers deep,
// and locates the fields Parse interprets. The last of duplicate keys wins,
// as in encoding/json.
func (s *scanner) instance(depth int) (head, bool) {
	var h head
	d := s.data
	if depth+1 > maxDepth {
		return h, s.fail(s.pos, "exceeded max depth")
	}
	s.pos++
	from := s.ws()
	if s.pos < len(d) && d[s.pos] == '}' {
		s.wantNone(from)
		s.pos++
		return h, true
	}
	s.wantNL(from, 1)
	for {
		if s.pos >= len(d) || d[s.pos] != '"' {
			return h, s.failChar("looking for beginning of object key string")
		}
		kstart := s.pos
		if !s.str() {
			return h, false
		}
		lit, esc := d[kstart:s.pos], s.esc
		if !s.colon() {
			return h, false
		}
		vstart := s.pos
		if !s.value(depth+1, 1) {
			return h, false
		}
		sp := span{vstart, s.pos}
		switch matchKey(lit, esc, instanceFields) {
		case 0:
			h.key = sp
		case 1:
			if d[vstart] != 'n' { // null leaves a string as it was
				h.status = sp
			}
		case 2:
			if d[vstart] != 'n' {
				h.deposed = sp
			}
		case 3:
			h.deps = sp
		}
		from = s.ws()
		if s.pos >= len(d) {
			return h, s.failEOF()
		}
		switch d[s.pos] {
		case ',':
			s.wantNone(from)
			s.pos++
			from = s.ws()
			s.wantNL(from, 1)
			continue
		case '}':
			s.wantNL(from, 0)
			s.pos++
			return h, true
		}
		return h, s.failChar("after object key:value pair")
	}
}

// setupReuse indexes prev's instances by fragment hash when prev was parsed
// from a document of the same format.
func (p *parser) setupReuse() {
	prev := p.prev
	// A lean parse scans each instance once its resource is known, as
	// one reusing prev scans what it does not find there.
	p.reuse = p.lean
	if prev == nil {
		return
	}
	if len(prev.Outputs) > 0 {
		p.prevOuts = make(map[string]int, len(prev.Outputs))
		for i := range prev.Outputs {
			p.prevOuts[prev.Outputs[i].Name] = i
		}
	}
	n := 0
	for i := range prev.Instances {
		if in := &prev.Instances[i]; in.parsedAs() && in.fragmentFormat == p.format {
			n++
		}
	}
	if n < len(prev.Instances) {
		// Instances loaded from a store, or parsed from the other
		// layout: found again by their objects' hash once compacted, so
		// that the state keeps one copy of each object.
		p.reuse = true
		p.prevObjs = make(map[Hash]int32, len(prev.Instances)-n)
		for i := range prev.Instances {
			if in := &prev.Instances[i]; !in.parsedAs() || in.fragmentFormat != p.format {
				p.prevObjs[in.Hash] = int32(i)
			}
		}
	}
	if n == 0 {
		return
	}
	p.reuse = true
	p.prevIdx = make(map[uint64]int32, n)
	p.prevNext = make([]int32, len(prev.Instances))
	for i := len(prev.Instances) - 1; i >= 0; i-- {
		in := &prev.Instances[i]
		p.prevNext[i] = -1
		if !in.parsedAs() || in.fragmentFormat != p.format {
			continue
		}
		if j, ok := p.prevIdx[in.fragHash]; ok {
			p.prevNext[i] = j
		}
		p.prevIdx[in.fragHash] = int32(i)
	}
}

// lookup finds an instance of prev with this resource header and a
// fragment of this length and hashes. prev need not hold its document any
// more (see Detach): the two 64-bit hashes, of independent random seeds,
// stand for the bytes; two different fragments of one length share both
// with a chance of 2^-128.
func (p *parser) lookup(h, sum uint64, r *Resource, frag []byte) int {
	j, ok := p.prevIdx[h]
	if !ok {
		return -1
	}
	for ; j >= 0; j = p.prevNext[j] {
		in := &p.prev.Instances[j]
		if in.fragHash == h && in.fragSum == sum && in.fragLen == len(frag) && in.Resource == *r {
			return int(j)
		}
	}
	return -1
}

// skipKnown moves past the instance at pd.start without validating it when
// its bytes are those of prev's instance p.guess (both of its hashes
// match over its fragment's length), which a parse validated in the same
// place of a document of the same layout, and records the hashes in pd
// for finishResource, which decides (by its resource header too) whether
// it is that instance. An unchanged instance so costs two hash passes
// over its bytes, not a scan as well. When the bytes differ it moves on
// the guess (a changed instance is most often where it was) and reports
// false: the caller validates the instance.
func (p *parser) skipKnown(pd *pending) bool {
	if p.prevIdx == nil || p.guess >= len(p.prev.Instances) {
		return false
	}
	in := &p.prev.Instances[p.guess]
	p.guess++
	end := pd.start + in.fragLen
	if !in.parsedAs() || in.fragmentFormat != p.format || end > len(p.s.data) {
		return false
	}
	frag := p.s.data[pd.start:end]
	sum := maphash.Bytes(sumSeed, frag)
	if sum != in.fragSum {
		return false
	}
	raw := maphash.Bytes(fragmentSeed, frag)
	if raw^headerHash(&in.Resource) != in.fragHash {
		return false
	}
	pd.hashed, pd.rawHash, pd.sum = true, raw, sum
	p.s.pos = end
	return true
}

// headerHash is the part of an instance's fragment hash that comes from its
// resource header.
func headerHash(r *Resource) uint64 {
	var h maphash.Hash
	h.SetSeed(fragmentSeed)
	for _, s := range [...]string{r.Module, r.Mode, r.Type, r.Name, r.Each, r.Provider} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return h.Sum64()
}

func (p *parser) finishResource(ri int, r *Resource) {
	if len(p.pend) == 0 {
		return
	}
	s := &p.s
	hh := headerHash(r)
	again := p.done.From(p.pend[0].start)
	defer again.Flush(p.pend[len(p.pend)-1].end)
	for i := range p.pend {
		pd := &p.pend[i]
		again.At(pd.start)
		frag := s.data[pd.start:pd.end:pd.end]
		if !pd.hashed {
			pd.rawHash, pd.sum = maphash.Bytes(fragmentSeed, frag), maphash.Bytes(sumSeed, frag)
		}
		fh, sum := pd.rawHash^hh, pd.sum
		if p.prevIdx != nil {
			if j := p.lookup(fh, sum, r, frag); j >= 0 {
				p.guess = j + 1
				in := p.prev.Instances[j]
				in.Resource = *r
				in.fragment, in.fragOff = frag, int64(pd.start)
				if !p.addInstance(&in, ri, pd) {
					return
				}
				continue
			}
		}
		var (
			hash     Hash
			canon    Hash // of a lean instance
			spelling Hash // of a lean instance (see Instance.Spelling)
		)
		if p.lean && !pd.scanned {
			spelling = spellingOf(p.format, r, frag)
			if known, ok := p.spelled[spelling]; ok && !known.Canonical.IsZero() {
				if !p.addSpelled(ri, r, pd, frag, fh, sum, spelling, known) {
					return
				}
				continue
			}
		}
		if !pd.scanned {
			save := s.pos
			s.pos = pd.start
			var ok bool
			pd.head, pd.canon, ok = p.scanInstance()
			if !ok { // cannot happen: the fragment was validated
				return
			}
			hash = instanceHash(r, s.out)
			switch j, ok := p.prevObjs[hash]; {
			case ok && p.prev.Instances[j].Resource == *r && bytes.Equal(p.prev.Instances[j].Object, s.out):
				pd.obj = p.prev.Instances[j].Object
			case p.lean && pd.canon:
				// Read again from its fragment when needed (ObjectFrom).
				canon = canonicalHashOf(&Instance{Resource: *r, Object: s.out})
				pd.obj = nil
				pd.spelling = spelling
			default:
				pd.obj = p.arena.Keep(s.out)
			}
			s.pos = save
		} else {
			hash = instanceHash(r, pd.obj)
		}
		in := Instance{
			Resource:       *r,
			Object:         pd.obj,
			fragment:       frag,
			fragOff:        int64(pd.start),
			fragmentFormat: p.format,
			canonical:      pd.canon,
			fragHash:       fh,
			fragSum:        sum,
			fragLen:        len(frag),
			canon:          canon,
			spelling:       pd.spelling,
		}
		if pd.obj != nil {
			in.objFirst = &pd.obj[0]
		}
		if at, reason := decodeHead(s.data, pd.head, &in); reason != "" {
			p.fieldf(at, reason, "resources[%d].instances[%d] (%s)", ri, pd.index, r.Address())
			return
		}
		in.Hash = hash
		if !p.addInstance(&in, ri, pd) {
			return
		}
	}
}

// addSpelled adds the lean instance of r at pd, whose spelling a store
// knows: its Hash and canonical hash are known's, and of its fragment
// only the fields Parse interprets are read (its bytes were validated).
func (p *parser) addSpelled(ri int, r *Resource, pd *pending, frag []byte, fh, sum uint64, spelling Hash, known Spelled) bool {
	s := &p.s
	save := s.pos
	s.pos = pd.start
	h, ok := s.instance(instanceDepth)
	s.pos = save
	if !ok { // cannot happen: the fragment was validated
		return false
	}
	in := Instance{
		Resource:       *r,
		Hash:           known.Hash,
		fragment:       frag,
		fragOff:        int64(pd.start),
		fragmentFormat: p.format,
		canonical:      true,
		fragHash:       fh,
		fragSum:        sum,
		fragLen:        len(frag),
		canon:          known.Canonical,
		spelling:       spelling,
	}
	if at, reason := decodeHead(s.data, h, &in); reason != "" {
		p.fieldf(at, reason, "resources[%d].instances[%d] (%s)", ri, pd.index, r.Address())
		return false
	}
	return p.addInstance(&in, ri, pd)
}

func (p *parser) addInstance(in *Instance, ri int, pd *pending) bool {
	if p.ids == nil {
		n := 64
		if p.prev != nil {
			n = len(p.prev.Instances) + 16
		} else {
			n = max(n, instancesHint(p.s.data, p.done.From(0)))
		}
		p.ids = make(map[uint64]int32, n)
		if p.st.Instances == nil {
			p.st.Instances = make([]Instance, 0, n)
		}
	}
	h := idHash(in)
	if j, ok := p.ids[h]; ok {
		dup := idOf(in) == idOf(&p.st.Instances[j])
		if !dup { // a 64-bit collision: compare with them all
			for k := range p.st.Instances {
				if dup = idOf(in) == idOf(&p.st.Instances[k]); dup {
					break
				}
			}
		}
		if dup {
			p.fieldf(pd.start, fmt.Sprintf("%s appears more than once", in.ID()), "resources[%d].instances[%d]", ri, pd.index)
			return false
		}
	} else {
		p.ids[h] = int32(len(p.st.Instances))
	}
	p.st.Instances = append(p.st.Instances, *in)
	return true
}

// instancesHint guesses how many instances a document holds, so that a
// large state's instances are not copied as their slice grows (at the
// last doubling, three times their size at once): every instance object
// has one "schema_version" key. A document may spell it elsewhere too, so
// the guess is bounded by one instance per 256 bytes of document, which
// keeps the slice within about the document's size; a state of smaller
// instances grows its slice past the guess as before.
// It counts a megabyte at a time, telling done (a key split between two
// of them is not counted: a guess needs no more).
func instancesHint(data []byte, done Progress) int {
	n := 0
	for at := 0; at < len(data); at += ProgressStep {
		end := min(at+ProgressStep, len(data))
		n += bytes.Count(data[at:end], []byte(`"schema_version"`))
		done.At(end)
	}
	return min(n, len(data)/256) + 16
}

// idHash hashes what idOf returns.
func idHash(in *Instance) uint64 {
	var h maphash.Hash
	h.SetSeed(fragmentSeed)
	r := &in.Resource
	for _, s := range [...]string{r.Module, r.Mode, r.Type, r.Name, in.Key.Str, in.Deposed} {
		h.WriteString(s)
		h.WriteByte(0)
	}
	var k [9]byte
	k[0] = byte(in.Key.Kind)
	binary.LittleEndian.PutUint64(k[1:], uint64(in.Key.Int))
	h.Write(k[:])
	return h.Sum64()
}

// decodeHead sets in's Key, Status, Deposed and Dependencies from the
// instance fields located by h in d. On failure it returns where and why.
func decodeHead(d []byte, h head, in *Instance) (int, string) {
	if h.key.end > 0 {
		tok := h.key.bytes(d)
		switch c := tok[0]; {
		case c == 'n':
			in.Key = IndexKey{}
		case c == '"':
			in.Key = IndexKey{Kind: StringKey, Str: decodeString(tok)}
		case c == '-' || c >= '0' && c <= '9':
			n, ok := parseInt(tok)
			if !ok {
				return h.key.start, fmt.Sprintf("index_key %.40s is not an integer (count) or a string (for_each)", tok)
			}
			in.Key = IndexKey{Kind: IntKey, Int: n}
		default:
			return h.key.start, fmt.Sprintf("index_key %.40s is not an integer (count) or a string (for_each)", tok)
		}
	}
	if h.status.end > 0 {
		tok := h.status.bytes(d)
		switch tok[0] {
		case 'n':
		case '"':
			in.Status = decodeString(tok)
		default:
			return h.status.start, "status must be a string"
		}
		if in.Status != "" && in.Status != "tainted" {
			return h.status.start, fmt.Sprintf("status %q is neither \"tainted\" nor empty", in.Status)
		}
	}
	if h.deposed.end > 0 {
		tok := h.deposed.bytes(d)
		switch tok[0] {
		case 'n':
		case '"':
			in.Deposed = decodeString(tok)
		default:
			return h.deposed.start, "deposed must be a string"
		}
	}
	if h.deps.end > 0 {
		tok := h.deps.bytes(d)
		switch tok[0] {
		case 'n':
			in.Dependencies = nil
		case '[':
			deps, ok := stringList(tok)
			if !ok {
				return h.deps.start, "dependencies must be a list of strings"
			}
			in.Dependencies = deps
		default:
			return h.deps.start, "dependencies must be a list of strings"
		}
	}
	return 0, ""
}

// stringList decodes a valid JSON array that should hold only strings.
func stringList(tok []byte) ([]string, bool) {
	s := scanner{data: tok, pos: 1}
	list := []string{}
	s.ws()
	if s.pos < len(tok) && tok[s.pos] == ']' {
		return list, true
	}
	for {
		if s.pos >= len(tok) || tok[s.pos] != '"' {
			return nil, false
		}
		start := s.pos
		if !s.str() {
			return nil, false
		}
		list = append(list, decodeString(tok[start:s.pos]))
		s.ws()
		if s.pos >= len(tok) {
			return nil, false
		}
		switch tok[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case ']':
			return list, true
		default:
			return nil, false
		}
	}
}

// parseInt reads a JSON number token that must be an integer in int64's
// range, as encoding/json does into an int64.
func parseInt(tok []byte) (int64, bool) {
	neg := len(tok) > 0 && tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	u, ok := parseDigits(tok)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// parseUint reads a JSON number token that must be a non-negative integer
// in uint64's range.
func parseUint(tok []byte) (uint64, bool) { return parseDigits(tok) }

func parseDigits(tok []byte) (uint64, bool) {
	if len(tok) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	return u, true
}

package graph

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// envelope notes, key by key, whether the top level of a document is
// exactly OpenTofu's client-side encrypted envelope (see EncryptionError).
// OpenTofu writes it with encoding/json from a struct of these fields, so
// the keys are spelt exactly so.
type envelope struct {
	marked bool   // a key matching "encryption_version" in any spelling
	seen   uint8  // the envelope's keys seen, a bit each
	key    []byte // the first key that departs from the envelope
	reason string // and how; "" for a key that is not part of it
	// serial says serial is a number (not null); meta and version are
	// the values of meta and encryption_version, read once the document
	// is known to be the envelope (see clear).
	serial        bool
	meta, version []byte
}

// Envelope is what an OpenTofu client-side encrypted state says in the
// clear: the serial and lineage OpenTofu copies out of the state it
// encrypts (so that backends can guard writes), its encryption_version,
// and which key providers its meta holds metadata for. The meta's values
// (salts, wrapped keys) are never read.
type Envelope struct {
	// Serial is the state's serial; HasSerial is false when the envelope
	// has none (absent or null).
	Serial    uint64
	HasSerial bool
	// Lineage is the state's lineage, "" when the envelope has none.
	Lineage string
	// Version is the envelope's encryption_version ("v0").
	Version string
	// MetaKeys are the keys of meta, in document order, decoded: each is
	// a key provider's address ("key_provider.pbkdf2.team") or the
	// encrypted_metadata_alias it was given. At most MaxMetaKeys, each cut
	// to MaxMetaKeyLen bytes; MoreMetaKeys counts those left out.
	MetaKeys     []string
	MoreMetaKeys int
}

// Bounds of Envelope.MetaKeys: a meta is a handful of key providers, and
// what a server keeps of a document it cannot read stays small whatever
// the document holds.
const (
	MaxMetaKeys   = 16
	MaxMetaKeyLen = 128
)

// The envelope's keys, as literals, and their bits in envelope.seen.
var envelopeKeys = [...]string{`"serial"`, `"lineage"`, `"meta"`, `"encrypted_data"`, `"encryption_version"`}

const (
	envSerial = iota
	envLineage
	envMeta
	envData
	envVersion
)

// note records the top-level key lit, matched to field f, whose value is
// val (valid JSON).
func (e *envelope) note(f int, lit, val []byte) {
	if f == fEncryptionVersion {
		e.marked = true
	}
	if e.key != nil {
		return
	}
	i := -1
	for k, name := range envelopeKeys {
		if string(lit) == name {
			i = k
		}
	}
	switch {
	case i < 0:
		e.key = lit
	case e.seen&(1<<i) != 0:
		e.key, e.reason = lit, "appears more than once"
	default:
		e.seen |= 1 << i
		if reason := envelopeValue(i, val); reason != "" {
			e.key, e.reason = lit, reason
		}
		switch i {
		case envSerial:
			e.serial = val[0] != 'n'
		case envMeta:
			e.meta = val
		case envVersion:
			e.version = val
		}
	}
}

// clear fills env with the clear part of the envelope whose top-level
// fields were read into st (serial and lineage), once departure found
// none.
func (e *envelope) clear(st *State, env *Envelope) {
	*env = Envelope{Serial: st.Serial, HasSerial: e.serial, Lineage: st.Lineage, Version: decodeString(e.version)}
	env.MetaKeys, env.MoreMetaKeys = metaKeys(e.meta)
}

// metaKeys lists the keys of the JSON object obj (valid JSON: the parse
// scanned it), skipping their values unread, within MaxMetaKeys and
// MaxMetaKeyLen.
func metaKeys(obj []byte) (keys []string, more int) {
	s := &scanner{data: obj, pos: 1}
	s.ws()
	if s.pos < len(obj) && obj[s.pos] == '}' {
		return nil, 0
	}
	for s.pos < len(obj) {
		at := s.pos
		if obj[at] != '"' || !s.str() {
			return keys, more
		}
		key := decodeString(obj[at:s.pos])
		if !s.colon() {
			return keys, more
		}
		if len(keys) < MaxMetaKeys {
			keys = append(keys, cut(key, MaxMetaKeyLen))
		} else {
			more++
		}
		if !s.value(1, 0) {
			return keys, more
		}
		s.ws()
		if s.pos >= len(obj) || obj[s.pos] != ',' {
			break
		}
		s.pos++
		s.ws()
	}
	return keys, more
}

// cut shortens s to at most n bytes, at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// envelopeValue says how val is not what key i of the envelope holds, or "".
func envelopeValue(i int, val []byte) string {
	switch i {
	case envSerial:
		if _, ok := parseUint(val); !ok && val[0] != 'n' {
			return "must be a non-negative integer or null"
		}
	case envLineage:
		if val[0] != '"' {
			return "must be a string"
		}
	case envMeta:
		if val[0] != '{' {
			return "must be an object"
		}
	case envData:
		if val[0] != '"' || !isBase64(stringBytes(val)) {
			return "must be base64 (a non-empty string), as encoding/json writes bytes"
		}
	case envVersion:
		if val[0] != '"' || len(val) == 2 {
			return "must be a non-empty string"
		}
	}
	return ""
}

// departure says how a marked document departs from the envelope, or ""
// when it is the envelope.
func (e *envelope) departure() string {
	switch {
	case e.key != nil && e.reason == "":
		return fmt.Sprintf("the key %.80s is not part of it", e.key)
	case e.key != nil:
		return fmt.Sprintf("%.80s %s", e.key[1:len(e.key)-1], e.reason)
	case e.seen&(1<<envData) == 0:
		return "encrypted_data is missing"
	case e.seen&(1<<envMeta) == 0:
		return "meta is missing"
	}
	return ""
}

// stringBytes returns the contents of the string literal lit, without
// copying it unless it has escapes.
func stringBytes(lit []byte) []byte {
	body := lit[1 : len(lit)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		return []byte(decodeString(lit))
	}
	return body
}

// isBase64 reports whether s is standard base64 with padding, as
// encoding/json writes a []byte.
func isBase64(s []byte) bool {
	n := len(s)
	if n == 0 || n%4 != 0 {
		return false
	}
	pad := 0
	for pad < 2 && s[n-1-pad] == '=' {
		pad++
	}
	for i := 0; i < n-pad; i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/':
		default:
			return false
		}
	}
	return true
}

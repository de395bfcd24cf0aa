package kilolock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The audit vocabulary: who acts (Caller), what is kept of it
// (AuditEntry), and the checks of the names and ids callers send, shared by
// the engine and the feature packages.

// maxIDLength bounds an id looked up (ws_…, env_…, tok_…): generated ids
// have 20 characters at most.
const maxIDLength = 64

// Caller is who asks Control for a change, as its audit entry records it.
type Caller struct {
	// Actor is who: "operator", a token id, a user. Empty is recorded as
	// "anonymous".
	Actor string
	// From is where the change came from: a remote address, a host.
	From string
	// RequestID ties the audit entry to a request's logs; may be empty.
	RequestID string
}

// Who is who c is, as the audit log records it: Actor, or "anonymous".
func (c Caller) Who() string {
	if c.Actor == "" {
		return "anonymous"
	}
	return c.Actor
}

// ControlError is a control-plane request naming something that is not
// there, or that is there already, or that a workspace's rules forbid, in
// words for people. It wraps ErrNotFound or ErrConflict, so callers branch
// with errors.Is; Code is stable (workspace_not_found, slug_taken,
// last_owner, …).
type ControlError struct {
	Err     error // ErrNotFound or ErrConflict
	Code    string
	Message string
	Hint    string
}

func (e *ControlError) Error() string { return e.Message }

func (e *ControlError) Unwrap() error { return e.Err }

// AuditEntry records one control-plane change or one denied request: who,
// what, when and from where.
type AuditEntry struct {
	ID        int64     `json:"id"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	Target    string    `json:"target"`
	At        time.Time `json:"at"`
	From      string    `json:"from"`
	Denied    bool      `json:"denied"`
	Reason    string    `json:"reason,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
}

// AuditFilter selects audit entries.
type AuditFilter struct {
	DeniedOnly bool
	Limit      int // 0 or less means 100
}

// NewID returns a random identifier with prefix ("ws_", "env_", "tok_"):
// 16 lowercase hex digits after it.
func NewID(prefix string) string { return prefix + randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics if the OS cannot supply)
	return hex.EncodeToString(b)
}

// ValidText refuses text a record should not hold: control characters
// other than tab, invisible characters that reorder or hide the text
// around them (see deceptiveRune), and more than max bytes.
func ValidText(field, s string, max int) error {
	if len(s) > max {
		return &InvalidError{Code: "invalid_" + field, Message: fmt.Sprintf("%s is %d bytes; at most %d are kept", field, len(s), max), Hint: "shorten it"}
	}
	for _, c := range s {
		switch {
		case unicode.IsControl(c) && c != '\t':
			return &InvalidError{Code: "invalid_" + field, Message: fmt.Sprintf("%s holds a control character (%U)", field, c), Hint: "use printable text"}
		case deceptiveRune(c):
			return &InvalidError{Code: "invalid_" + field, Message: fmt.Sprintf("%s holds %s, which changes how the text around it is shown without being seen itself", field, describeRune(c)), Hint: "use visible text only; type it again rather than paste it"}
		}
	}
	return nil
}

// deceptiveRune reports whether c is invisible text that changes how the
// text around it reads: the bidirectional embeddings, overrides,
// isolates and marks (a name shown as "Acme" that is something else, the
// "Trojan Source" trick), zero-width spaces and the other format
// characters (Unicode category Cf: soft hyphen, word joiner, BOM, tag
// characters), and the line and paragraph separators. The zero-width
// joiner and non-joiner are kept: Persian, the Indic scripts and emoji
// sequences need them, and they reorder nothing.
func deceptiveRune(c rune) bool {
	switch {
	case c == '\u200c' || c == '\u200d':
		return false
	case c == '\u2028' || c == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, c)
}

// runeNames names the deceptive runes a refusal is most likely to meet.
var runeNames = map[rune]string{
	0x061c: "ARABIC LETTER MARK", 0x200b: "ZERO WIDTH SPACE", 0x200e: "LEFT-TO-RIGHT MARK", 0x200f: "RIGHT-TO-LEFT MARK",
	0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING", 0x202c: "POP DIRECTIONAL FORMATTING",
	0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE", 0x2060: "WORD JOINER",
	0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE",
	0x2069: "POP DIRECTIONAL ISOLATE", 0xfeff: "ZERO WIDTH NO-BREAK SPACE", 0x00ad: "SOFT HYPHEN",
	0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR",
}

// describeRune names c for a refusal: its code point, and its Unicode name
// when known ("U+202E RIGHT-TO-LEFT OVERRIDE").
func describeRune(c rune) string {
	if n, ok := runeNames[c]; ok {
		return fmt.Sprintf("%U %s", c, n)
	}
	return fmt.Sprintf("the invisible formatting character %U", c)
}

// ValidID checks an id to look up, what naming the kind of thing
// ("workspace", "environment", "token"): 1 to 64 letters, digits, '_' and
// '-'. An id of that form that names nothing is for the lookup to answer
// (ErrNotFound); one that no store could hold is an *InvalidError with
// code invalid_id.
func ValidID(what, id string) error {
	if validID(id) {
		return nil
	}
	return &InvalidError{Code: "invalid_id", Message: fmt.Sprintf("%s is not a%s %s id", Clip(id), article(what), what),
		Hint: "ids are a prefix and 16 hex digits, e.g. ws_0123456789abcdef; kl workspace list, kl env list and kl token list show them"}
}

// validID is ^[A-Za-z0-9_-]+$ of at most maxIDLength bytes, as a loop:
// the authenticated lane checks one on every request.
func validID(id string) bool {
	if len(id) == 0 || len(id) > maxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func article(word string) string {
	if strings.ContainsRune("aeiou", rune(word[0])) {
		return "n"
	}
	return ""
}

// Clip quotes s for a message, cut to its first 40 bytes (with its length)
// when longer, so that an error never echoes a huge value.
func Clip(s string) string {
	const most = 40
	if len(s) <= most {
		return fmt.Sprintf("%q", s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// Deceptive says why name holds a character that changes how the text
// around it is shown without being seen itself (see ValidText), or "".
func Deceptive(name string) string {
	if i := strings.IndexFunc(name, deceptiveRune); i >= 0 {
		c, _ := utf8.DecodeRuneInString(name[i:])
		return "holds " + describeRune(c) + ", which changes how the text around it is shown without being seen itself"
	}
	return ""
}

package kilolock

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The names the control plane keeps or looks up, bounded and validated
// before they reach a store: a store would otherwise keep a 100 KB
// workspace name, and PostgreSQL refuses a NUL byte in any text with a
// driver error.
const (
	// MaxNameLength bounds a workspace's or a token's name, in characters.
	MaxNameLength = 128
	// MaxUserIDLength bounds a user id, in characters.
	MaxUserIDLength = 128
	// maxIDLength bounds an id looked up (ws_…, env_…, tok_…): generated
	// ids have 20 characters at most.
	maxIDLength = 64
)

var userIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+:-]*$`)

// validName checks the free-text name of a workspace or token: at most
// MaxNameLength characters of valid UTF-8, without control characters,
// without invisible characters that reorder or hide text (see
// deceptiveRune) and without spaces around it. It returns why not, or "".
func validName(name string) string {
	switch {
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case utf8.RuneCountInString(name) > MaxNameLength:
		return fmt.Sprintf("is %d characters long; the most is %d", utf8.RuneCountInString(name), MaxNameLength)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "holds a control character (a NUL, a newline, an escape…)"
	case strings.TrimSpace(name) != name:
		return "starts or ends with a space"
	}
	if i := strings.IndexFunc(name, deceptiveRune); i >= 0 {
		c, _ := utf8.DecodeRuneInString(name[i:])
		return "holds " + describeRune(c) + ", which changes how the text around it is shown without being seen itself"
	}
	return ""
}

// validText refuses text a record should not hold: control characters
// other than tab, invisible characters that reorder or hide the text
// around them (see deceptiveRune), and more than max bytes.
func validText(field, s string, max int) error {
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

// ValidWorkspaceName reports whether name may name a workspace: 1 to
// MaxNameLength characters of text (letters, spaces and punctuation in any
// script), no control characters, no spaces around it. It returns nil or an
// *InvalidError with code invalid_workspace.
func ValidWorkspaceName(name string) error {
	why := validName(name)
	if name == "" || strings.TrimSpace(name) == "" {
		why = "is empty"
	}
	if why == "" {
		return nil
	}
	return &InvalidError{Code: "invalid_workspace", Message: fmt.Sprintf("the workspace name %s %s", clip(name), why),
		Hint: fmt.Sprintf("name the workspace in 1 to %d characters of visible text, e.g. \"Acme Corp\"; type the name again rather than paste it, which may carry invisible characters", MaxNameLength)}
}

// validTokenName checks a token's optional name (code invalid_token).
func validTokenName(name string) error {
	if why := validName(name); why != "" {
		return &InvalidError{Code: "invalid_token", Message: fmt.Sprintf("the token name %s %s", clip(name), why),
			Hint: fmt.Sprintf("name the token in at most %d characters of visible text, e.g. \"ci deploy\", or not at all", MaxNameLength)}
	}
	return nil
}

// ValidUserID reports whether id may name a user: 1 to MaxUserIDLength
// letters, digits and . _ @ + : -, starting with a letter or digit (a login,
// an email address, "github:1234"). It returns nil or an *InvalidError with
// code invalid_member.
func ValidUserID(id string) error {
	if userIDRE.MatchString(id) && len(id) <= MaxUserIDLength {
		return nil
	}
	msg := "a member needs a user id"
	if id != "" {
		msg = fmt.Sprintf("%s is not a user id", clip(id))
	}
	return &InvalidError{Code: "invalid_member", Message: msg,
		Hint: fmt.Sprintf("name the user in 1 to %d letters, digits and . _ @ + : -, e.g. alice or alice@example.com", MaxUserIDLength)}
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
	return &InvalidError{Code: "invalid_id", Message: fmt.Sprintf("%s is not a%s %s id", clip(id), article(what), what),
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

// clip quotes s for a message, cut to its first 40 bytes (with its length)
// when longer, so that an error never echoes a huge value.
func clip(s string) string {
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

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
// MaxNameLength characters of valid UTF-8, without control characters and
// without spaces around it. It returns why not, or "".
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
	return ""
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
		Hint: fmt.Sprintf("name the workspace in 1 to %d characters of text, e.g. \"Acme Corp\"", MaxNameLength)}
}

// validTokenName checks a token's optional name (code invalid_token).
func validTokenName(name string) error {
	if why := validName(name); why != "" {
		return &InvalidError{Code: "invalid_token", Message: fmt.Sprintf("the token name %s %s", clip(name), why),
			Hint: fmt.Sprintf("name the token in at most %d characters of text, e.g. \"ci deploy\", or not at all", MaxNameLength)}
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

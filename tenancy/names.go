package tenancy

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kilolock/kilolock"
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
	return kilolock.Deceptive(name)
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
	return &kilolock.InvalidError{Code: "invalid_workspace", Message: fmt.Sprintf("the workspace name %s %s", kilolock.Clip(name), why),
		Hint: fmt.Sprintf("name the workspace in 1 to %d characters of visible text, e.g. \"Acme Corp\"; type the name again rather than paste it, which may carry invisible characters", MaxNameLength)}
}

// validTokenName checks a token's optional name (code invalid_token).
func validTokenName(name string) error {
	if why := validName(name); why != "" {
		return &kilolock.InvalidError{Code: "invalid_token", Message: fmt.Sprintf("the token name %s %s", kilolock.Clip(name), why),
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
		msg = fmt.Sprintf("%s is not a user id", kilolock.Clip(id))
	}
	return &kilolock.InvalidError{Code: "invalid_member", Message: msg,
		Hint: fmt.Sprintf("name the user in 1 to %d letters, digits and . _ @ + : -, e.g. alice or alice@example.com", MaxUserIDLength)}
}

package sqlstore

import (
	"errors"
	"regexp"
	"strings"
)

// number is what a database's message may hold of a numeric value.
var number = regexp.MustCompile(`[0-9]+`)

// Redact is msg, a database's message of a statement that failed while it
// ran, without anything it may quote of the values the statement met:
// both SQLite and PostgreSQL put such a value after a colon ("bad JSON
// path: '…'", "invalid input syntax for type integer: "…"") or in quotes
// ("relation "…" does not exist"), and some give a number ("requested
// character too large for encoding: 1114112"). So what follows the first
// colon goes, everything from the first quote to the last (a value may
// hold quotes of its own), and numbers become "…". What stays is the kind
// of failure, which never carries a value (though a tenant learns from it
// that a value of its own made the statement fail).
func Redact(msg string) string {
	if i := strings.IndexByte(msg, ':'); i >= 0 {
		msg = msg[:i]
	}
	if first := strings.IndexAny(msg, `'"`); first >= 0 {
		last := strings.LastIndexAny(msg, `'"`)
		if last == first {
			last = len(msg) - 1
		}
		msg = msg[:first] + "…" + msg[last+1:]
	}
	return strings.TrimSpace(number.ReplaceAllString(msg, "…"))
}

// TextError is an error a database found in a user's statement before it
// ran it (a syntax error, an unknown column): its message holds only the
// statement's own text, never a value of a row, so it needs no Redact.
type TextError struct{ Err error }

func (e TextError) Error() string { return e.Err.Error() }
func (e TextError) Unwrap() error { return e.Err }

// IsTextError reports whether err is, or wraps, a TextError.
func IsTextError(err error) bool {
	var te TextError
	return errors.As(err, &te)
}

package kilolock

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of QueryLimits.
const (
	DefaultQueryTimeout  = 30 * time.Second
	DefaultQueryMaxRows  = 10_000
	DefaultQueryMaxBytes = 8 << 20
)

// QueryRelations are the relations users' SQL may read: the documented
// views and the audit log. A Store refuses, inside the database, a query
// that reads any other table (tokens, payloads, …).
var QueryRelations = []string{
	"resources", "resource_dependencies", "outputs", "resource_history", "version_history",
	"rejected_commit_history", "resource_drift", "duplicate_objects", "audit_log",
}

// QueryHint is the hint of a refused or malformed query.
var QueryHint = "query the views " + strings.Join(QueryRelations[:len(QueryRelations)-1], ", ") +
	" and the table audit_log, with SELECT"

// QueryLimits bound one Store.Query. A zero field means its default.
type QueryLimits struct {
	// Timeout stops the statement: an *InvalidError with code
	// query_timeout.
	Timeout time.Duration
	// MaxRows is the most rows an answer holds; the rest are dropped.
	MaxRows int
	// MaxBytes bounds the answer's values (the length of each text or
	// blob, 8 for any other value) and each value the database builds for
	// it: past it the query fails with code query_too_large, so that the
	// memory a query takes stays bounded whatever it asks for.
	MaxBytes int
}

// Resolved returns l with the defaults in place of its zero fields.
func (l QueryLimits) Resolved() QueryLimits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultQueryTimeout
	}
	if l.MaxRows <= 0 {
		l.MaxRows = DefaultQueryMaxRows
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultQueryMaxBytes
	}
	return l
}

// TooLarge is the error of an answer that passed l.MaxBytes after rows
// rows, or (rows < 0) of one value the database refused to build.
func (l QueryLimits) TooLarge(rows int) error {
	what := fmt.Sprintf("the answer passed %d bytes after %d rows; the rest was not read", l.MaxBytes, rows)
	if rows < 0 {
		what = fmt.Sprintf("a value of the answer is larger than %d bytes; it was not read", l.MaxBytes)
	}
	return &InvalidError{
		Code:    "query_too_large",
		Message: "query: " + what,
		Hint:    "select fewer or smaller columns (e.g. attributes ->> 'id' rather than attributes, or substr(...)), narrow with WHERE, or add LIMIT; an operator may raise kld --query-max-bytes",
	}
}

// TimedOut is the error of a statement that ran past l.Timeout.
func (l QueryLimits) TimedOut() error {
	return &InvalidError{
		Code:    "query_timeout",
		Message: fmt.Sprintf("query: the statement ran past the limit of %s and was stopped", l.Timeout),
		Hint:    "narrow the query with WHERE and LIMIT; an operator may raise kld --query-timeout",
	}
}

// QueryDenied is the error of a query that reached beyond QueryRelations
// (a base table, a file, a role): msg is the database's refusal.
func QueryDenied(msg string) error {
	return &RefusedError{Code: "query_denied", Message: "query: " + msg, Hint: QueryHint, Err: ErrReadOnly}
}

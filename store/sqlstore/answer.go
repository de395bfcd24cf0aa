package sqlstore

import (
	"errors"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// Answer collects the rows of a user's query within its QueryLimits, as
// they are read: it never holds more than MaxRows rows or much more than
// MaxBytes bytes of values.
type Answer struct {
	Result *kilolock.QueryResult
	limits kilolock.QueryLimits
	bytes  int
}

// NewAnswer starts an answer with columns, within limits (resolved).
func NewAnswer(limits kilolock.QueryLimits, columns []string) *Answer {
	return &Answer{Result: &kilolock.QueryResult{Columns: columns, Rows: [][]any{}}, limits: limits.Resolved()}
}

// Full reports whether the answer holds MaxRows rows: the caller stops
// reading (the rest are dropped).
func (a *Answer) Full() bool { return len(a.Result.Rows) >= a.limits.MaxRows }

// Add appends row, whose values took size bytes as the database sent them;
// past MaxBytes it returns the query_too_large error instead.
func (a *Answer) Add(row []any, size int) error {
	a.bytes += size
	if a.bytes > a.limits.MaxBytes {
		return a.limits.TooLarge(len(a.Result.Rows))
	}
	a.Result.Rows = append(a.Result.Rows, row)
	return nil
}

// ValueSize is what a value counts toward QueryLimits.MaxBytes and
// WriteStats.Bytes: the length of a text or blob, 0 for NULL, 8 for any
// other value.
func ValueSize(v any) int {
	switch v := v.(type) {
	case nil:
		return 0
	case string:
		return len(v)
	case []byte:
		return len(v)
	}
	return 8
}

// ScopedError is err, an error of a tenant's statement, said as a
// tenant's: a refused read (query_denied) is tenancy.TenantQueryDenied,
// and a malformed statement's hint names the views a tenant may read.
func ScopedError(err error) error {
	var (
		re *kilolock.RefusedError
		ie *kilolock.InvalidError
	)
	switch {
	case errors.As(err, &re) && re.Code == "query_denied":
		return tenancy.TenantQueryDenied(strings.TrimPrefix(re.Message, "query: "))
	case errors.As(err, &ie) && ie.Hint == kilolock.QueryHint:
		tenant := *ie
		tenant.Hint = tenancy.TenantQueryHint
		return &tenant
	}
	return err
}

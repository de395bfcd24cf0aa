package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kilolock/kilolock"
)

// MaxQueryRows is the most rows Query returns; the rest are dropped.
const MaxQueryRows = 10_000

// Query runs one SQL statement on a read-only connection (opened with
// mode=ro and query_only), in a read-only transaction, so the database
// itself refuses any write: that gives ErrReadOnly with SQLite's message.
// A statement SQLite cannot run (a syntax error, an unknown table, a write
// to a view) is ErrInvalid.
//
// Parameters are positional: ? or $1, $2… (the latter works on PostgreSQL
// too). Values come back as int64, float64, string, bool (columns declared
// BOOLEAN, such as outputs.sensitive) or nil; JSON and other text as
// string; a BLOB that is not UTF-8 text as "\x" and lowercase hex, as
// PostgreSQL prints bytea. At most MaxQueryRows rows are returned.
func (s *Store) Query(ctx context.Context, query string, args ...any) (*kilolock.QueryResult, error) {
	tx, err := s.query.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, queryError(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, queryError(err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, queryError(err)
	}
	res := &kilolock.QueryResult{Columns: make([]string, len(types)), Rows: [][]any{}}
	boolean := make([]bool, len(types))
	for i, t := range types {
		res.Columns[i] = t.Name()
		switch strings.ToUpper(t.DatabaseTypeName()) {
		case "BOOLEAN", "BOOL":
			boolean[i] = true
		}
	}
	for len(res.Rows) < MaxQueryRows && rows.Next() {
		row := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, queryError(err)
		}
		for i, v := range row {
			row[i] = queryValue(v, boolean[i])
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, queryError(err)
	}
	return res, nil
}

// queryValue makes a scanned value one that encodes well as JSON.
func queryValue(v any, boolean bool) any {
	switch v := v.(type) {
	case int64:
		if boolean {
			return v != 0
		}
	case []byte:
		if json.Valid(v) || utf8.Valid(v) {
			return string(v)
		}
		return `\x` + hex.EncodeToString(v)
	}
	return v
}

// queryError translates an error of a user's statement: ErrReadOnly for
// a refused write, ErrInvalid for a statement SQLite rejects, the
// context's error when it ended, else as translate does.
func queryError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_AUTH:
			return fmt.Errorf("query: %w: %s (ATTACH, DETACH and PRAGMAs that change a setting are refused)", kilolock.ErrReadOnly, se.Error())
		case sqlite3.SQLITE_ERROR, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG:
			return &kilolock.InvalidError{
				Code:    "invalid_query",
				Message: fmt.Sprintf("query: %s", se.Error()),
				Hint:    "query the views resources, resource_dependencies, outputs, resource_history, version_history and rejected_commit_history with SELECT",
			}
		}
	} else if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, sql.ErrConnDone) && !isKilolock(err) {
		// database/sql's own complaints about the arguments.
		return &kilolock.InvalidError{Code: "invalid_query", Message: fmt.Sprintf("query: %v", err)}
	}
	return translate("query", err)
}

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
	"github.com/kilolock/kilolock/store/sqlstore"
)

// MaxQueryRows is the most rows Query returns by default; the rest are
// dropped.
const MaxQueryRows = kilolock.DefaultQueryMaxRows

// Query runs one SQL statement on a read-only connection (opened with
// mode=ro and query_only), in a read-only transaction, so the database
// itself refuses any write: that gives ErrReadOnly with SQLite's message.
// The connection's authorizer lets the statement read kilolock's
// QueryRelations and nothing else (a read of another table is a
// *kilolock.RefusedError, code query_denied). A statement SQLite cannot run
// (a syntax error, an unknown table) is ErrInvalid.
//
// Within limits: the statement is interrupted at limits.Timeout (code
// query_timeout); no string or blob the engine builds may pass
// limits.MaxBytes (sqlite3_limit SQLITE_LIMIT_LENGTH), nor the values of
// the answer all together (code query_too_large); rows past limits.MaxRows
// are dropped.
//
// Parameters are positional: ? or $1, $2… (the latter works on PostgreSQL
// too). Values come back as int64, float64, string, bool (columns declared
// BOOLEAN, such as outputs.sensitive) or nil; JSON and other text as
// string; a BLOB that is not UTF-8 text as "\x" and lowercase hex, as
// PostgreSQL prints bytea.
func (s *Store) Query(ctx context.Context, limits kilolock.QueryLimits, query string, args ...any) (*kilolock.QueryResult, error) {
	l := limits.Resolved()
	qctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	res, err := s.runQuery(qctx, l, query, args)
	if err != nil {
		return nil, queryError(ctx, qctx, l, err, nil)
	}
	return res, nil
}

func (s *Store) runQuery(ctx context.Context, l kilolock.QueryLimits, query string, args []any) (*kilolock.QueryResult, error) {
	conn, err := s.query.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return runQueryOn(ctx, conn, l, query, args)
}

// runQueryOn runs a user's statement on conn, in a read-only transaction,
// within l.
func runQueryOn(ctx context.Context, conn *sql.Conn, l kilolock.QueryLimits, query string, args []any) (*kilolock.QueryResult, error) {
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, l.MaxBytes); err != nil {
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	columns := make([]string, len(types))
	boolean := make([]bool, len(types))
	for i, t := range types {
		columns[i] = t.Name()
		switch strings.ToUpper(t.DatabaseTypeName()) {
		case "BOOLEAN", "BOOL":
			boolean[i] = true
		}
	}
	ans := sqlstore.NewAnswer(l, columns)
	for !ans.Full() && rows.Next() {
		row := make([]any, len(types))
		ptrs := make([]any, len(types))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		size := 0
		for i, v := range row {
			size += sqlstore.ValueSize(v)
			row[i] = queryValue(v, boolean[i])
		}
		if err := ans.Add(row, size); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ans.Result, nil
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

// queryError translates an error of a user's statement, run under qctx
// (ctx with the statement's deadline): the limits' errors for a statement
// stopped at the deadline or a value past MaxBytes, ErrReadOnly for a
// refused write, query_denied for a refused read, ErrInvalid for a
// statement SQLite rejects (its message as tell says it, when tell is not
// nil), the context's error when the caller's ended, else as translate
// does.
func queryError(ctx, qctx context.Context, l kilolock.QueryLimits, err error, tell func(string) string) error {
	if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return l.TimedOut()
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_TOOBIG:
			return l.TooLarge(-1)
		case sqlite3.SQLITE_AUTH:
			if strings.Contains(se.Error(), "prohibited") { // a denied SQLITE_READ
				return kilolock.QueryDenied(se.Error())
			}
			return fmt.Errorf("query: %w: %s (a query may only read: ATTACH, DETACH, writes and PRAGMAs that change a setting are refused)", kilolock.ErrReadOnly, se.Error())
		case sqlite3.SQLITE_ERROR, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH:
			if strings.Contains(se.Error(), "not authorized") { // a denied SQLITE_FUNCTION
				return kilolock.QueryDenied(se.Error())
			}
			msg := se.Error()
			if tell != nil {
				msg = tell(sqliteMessage(se))
			}
			return &kilolock.InvalidError{Code: "invalid_query", Message: "query: " + msg, Hint: kilolock.QueryHint}
		}
	} else if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, sql.ErrConnDone) && !sqlstore.Own(err) {
		// database/sql's own complaints about the arguments.
		return &kilolock.InvalidError{Code: "invalid_query", Message: fmt.Sprintf("query: %v", err)}
	}
	return translate("query", err)
}

// sqliteMessage is SQLite's own message of se, without the name of its
// result code the driver puts before it ("SQL logic error: ") and the
// code after it (" (1)").
func sqliteMessage(se *sqlite.Error) string {
	msg := strings.TrimSuffix(se.Error(), fmt.Sprintf(" (%d)", se.Code()))
	if _, after, ok := strings.Cut(msg, ": "); ok {
		return after
	}
	return msg
}

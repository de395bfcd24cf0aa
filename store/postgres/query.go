package postgres

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// Query runs one SQL statement in a read-only transaction (BEGIN READ
// ONLY) with a statement_timeout, on connections of its own as a role that
// may read kilolock's QueryRelations and nothing else: the login role Open
// keeps for it (see Open), or the one WithQueryURL names. Each new query
// connection is checked first: a superuser, a member of
// pg_read_server_files, pg_write_server_files or pg_execute_server_program,
// or a role that may read the table tokens gets no user SQL (a
// *kilolock.RefusedError, code query_role_unsafe). So the database itself
// refuses any write (ErrReadOnly with PostgreSQL's message), and any read
// of a table, a file or a program beyond the views (code query_denied,
// which matches ErrReadOnly too). A statement PostgreSQL rejects (a syntax
// error, an unknown table) is ErrInvalid.
//
// Within limits: statement_timeout is limits.Timeout (code query_timeout);
// no message of the answer may pass limits.MaxBytes (checked on its header,
// before it is read), nor its values all together (code query_too_large);
// rows past limits.MaxRows are dropped (the connection is closed rather
// than read to the end).
//
// Parameters are $1, $2… Values come back as the SQLite store gives them,
// so a result reads the same on both: int64, float64, string, bool or nil;
// json and jsonb as their JSON text; bytea as "\x" and lowercase hex;
// timestamps as UTC RFC 3339 text with microseconds; numeric as a
// json.Number; arrays as []any.
//
// The query connections are reset with DISCARD ALL after each query, so
// that nothing a statement leaves on its session (a session advisory lock,
// a setting, a prepared statement) outlives it.
func (s *Store) Query(ctx context.Context, limits kilolock.QueryLimits, query string, args ...any) (*kilolock.QueryResult, error) {
	if s.queryPool == nil {
		return nil, s.queryRefusal
	}
	return s.runUser(ctx, s.queryPool, limits, query, args, nil)
}

// scopeSetUp prepares a user's statement on the connection of backend pid
// whose deadline is timeout away: it returns the nonce to set in its
// transaction (kl.query_nonce) and what to do once it is over.
type scopeSetUp func(ctx context.Context, pid uint32, timeout time.Duration) (nonce string, done func(), err error)

// runUser runs a user's statement on a connection of pool, within limits,
// after setUp when it is not nil.
func (s *Store) runUser(ctx context.Context, pool *pgxpool.Pool, limits kilolock.QueryLimits, query string, args []any, setUp scopeSetUp) (*kilolock.QueryResult, error) {
	if limits.Timeout <= 0 {
		limits.Timeout = s.queryTimeout
	}
	l := limits.Resolved()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, s.acquireError(err)
	}
	keep := false
	defer func() {
		if !keep || !reset(conn) {
			// The pool drops a closed connection on release.
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = conn.Conn().Close(closeCtx)
			cancel()
		}
		conn.Release()
	}()

	// A message larger than the answer may be is refused on its header:
	// a huge value is never read into memory.
	conn.Conn().PgConn().Frontend().SetMaxBodyLen(l.MaxBytes + 1<<10)
	nonce := ""
	if setUp != nil {
		var done func()
		nonce, done, err = setUp(ctx, conn.Conn().PgConn().PID(), l.Timeout)
		if err != nil {
			keep = true
			return nil, err
		}
		defer done()
	}
	res, truncated, err := runQuery(ctx, conn.Conn(), l, query, args, nonce)
	if err != nil {
		keep = !conn.Conn().IsClosed()
		return nil, queryError(ctx, conn.Conn(), err, l, setUp != nil)
	}
	// A truncated result's remaining rows would have to be read to reuse
	// the connection: closing it is cheaper.
	keep = !truncated
	return res, nil
}

func runQuery(ctx context.Context, conn *pgx.Conn, l kilolock.QueryLimits, query string, args []any, nonce string) (res *kilolock.QueryResult, truncated bool, err error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if !truncated {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	// A SELECT (not a SET) so that the transaction has taken its snapshot
	// before the user's statement runs: set_config('transaction_read_only',
	// 'off') is refused after the first query.
	timeout := strconv.FormatInt(max(l.Timeout.Milliseconds(), 1), 10)
	// The nonce of a tenant's scope (see QueryScoped) is the
	// transaction's, set before its snapshot too.
	if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true), set_config('kl.query_nonce', $2, true)`, timeout, nonce); err != nil {
		return nil, false, err
	}
	if nonce != "" {
		// A tenant's statement is parsed on its own first, so that an
		// error of its text (which holds no row) is told apart from one
		// of its run (which may, and is redacted: see queryError).
		if _, err := conn.PgConn().Prepare(ctx, "", query, nil); err != nil {
			return nil, false, sqlstore.TextError{Err: err}
		}
	}
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, false, err
	}
	defer func() {
		if !truncated {
			rows.Close()
		}
	}()
	fields := rows.FieldDescriptions()
	columns := make([]string, len(fields))
	for i, f := range fields {
		columns[i] = f.Name
	}
	ans := sqlstore.NewAnswer(l, columns)
	for rows.Next() {
		if ans.Full() {
			return ans.Result, true, nil
		}
		raw := rows.RawValues()
		size := 0
		for _, r := range raw {
			size += len(r)
		}
		vals, err := rows.Values()
		if err != nil {
			return nil, false, err
		}
		for i, v := range vals {
			vals[i] = queryValue(v, fields[i], raw[i])
		}
		if err := ans.Add(vals, size); err != nil {
			return nil, false, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return ans.Result, false, nil
}

// reset ends what the user's statement may have left on the session and
// reports whether the connection is fit for reuse.
func reset(conn *pgxpool.Conn) bool {
	if conn.Conn().IsClosed() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The user's COMMIT or BEGIN could leave a transaction open.
	if conn.Conn().PgConn().TxStatus() != 'I' {
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return false
		}
	}
	_, err := conn.Exec(ctx, "DISCARD ALL")
	return err == nil
}

// queryError translates an error of a user's statement. A tenant's
// (scoped) statement that failed while it ran is told without anything
// the message may quote of the values it met (sqlstore.Redact), with its
// SQLSTATE; one that failed to parse keeps PostgreSQL's message and the
// position in the text.
func queryError(ctx context.Context, conn *pgx.Conn, err error, l kilolock.QueryLimits, scoped bool) error {
	var (
		pe  *pgconn.PgError
		big *pgproto3.ExceededMaxBodyLenErr
	)
	if errors.As(err, &pe) && scoped {
		if sqlstore.IsTextError(err) {
			if pe.Position > 0 {
				pe.Message += fmt.Sprintf(" (at character %d)", pe.Position)
			}
		} else {
			pe.Message, pe.Detail = sqlstore.Redact(pe.Message)+" (SQLSTATE "+pe.Code+")", ""
		}
	}
	switch {
	case ctx.Err() != nil:
		return translate(err)
	case errors.As(err, &big):
		return l.TooLarge(-1)
	case errors.As(err, &pe) && pe.Code == "25006":
		return fmt.Errorf("%w: %s", kilolock.ErrReadOnly, pe.Message)
	case errors.As(err, &pe) && pe.Code == "42501": // insufficient_privilege
		return kilolock.QueryDenied(pe.Message)
	case errors.As(err, &pe) && pe.Code == "57014":
		return l.TimedOut()
	case errors.As(err, &pe) && pe.Code == "54000": // program_limit_exceeded: a value too large to build
		return l.TooLarge(-1)
	case errors.As(err, &pe) && unavailableCode(pe.Code):
		return translate(err)
	case errors.As(err, &pe):
		msg := "query: " + pe.Message
		if pe.Detail != "" {
			msg += " (" + pe.Detail + ")"
		}
		return &kilolock.InvalidError{Code: "invalid_query", Message: msg, Hint: kilolock.QueryHint}
	case sqlstore.Own(err), conn.IsClosed():
		return translate(err)
	}
	// pgx refused the arguments before sending anything.
	return &kilolock.InvalidError{Code: "invalid_query", Message: "query: " + err.Error()}
}

// timeFormat is how Query returns timestamps: the SQLite store's format.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// queryValue makes a decoded value one that encodes well as JSON, and reads
// the same as the SQLite store's.
func queryValue(v any, f pgconn.FieldDescription, raw []byte) any {
	if v == nil {
		return nil
	}
	switch f.DataTypeOID {
	case pgtype.JSONOID:
		return string(raw)
	case pgtype.JSONBOID:
		if f.Format == pgtype.BinaryFormatCode && len(raw) > 0 {
			raw = raw[1:] // the jsonb version byte
		}
		return string(raw)
	case pgtype.DateOID:
		if t, ok := v.(time.Time); ok {
			return t.Format(time.DateOnly)
		}
	case pgtype.TimestampOID:
		if t, ok := v.(time.Time); ok {
			return t.Format("2006-01-02T15:04:05.000000")
		}
	}
	return jsonValue(v)
}

func jsonValue(v any) any {
	switch v := v.(type) {
	case nil, bool, string, int64:
		return v
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int:
		return int64(v)
	case uint32:
		return int64(v)
	case float32:
		return jsonFloat(float64(v))
	case float64:
		return jsonFloat(v)
	case []byte:
		return `\x` + hex.EncodeToString(v)
	case time.Time:
		return v.UTC().Format(timeFormat)
	case [16]byte: // uuid
		h := hex.EncodeToString(v[:])
		return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case pgtype.Numeric:
		f, err := v.Float64Value()
		if err == nil && f.Valid && (math.IsNaN(f.Float64) || math.IsInf(f.Float64, 0)) {
			return jsonFloat(f.Float64)
		}
		if b, err := v.MarshalJSON(); err == nil {
			return json.Number(b)
		}
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonValue(e)
		}
		return out
	case fmt.Stringer:
		return v.String()
	}
	if _, err := json.Marshal(v); err == nil {
		return v
	}
	return fmt.Sprint(v)
}

// jsonFloat keeps a float JSON can encode; NaN and the infinities become
// text, as PostgreSQL prints them.
func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

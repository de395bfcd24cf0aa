package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/kilolock/kilolock"
)

var _ kilolock.Store = (*Store)(nil)

// busyTimeout is how long a write waits for another process that holds the
// database's write lock before the store answers ErrUnavailable. A variable
// so that tests can shorten it.
var busyTimeout = 5 * time.Second

// Store is a kilolock.Store in one SQLite database file. It is safe for
// concurrent use, and several processes may open the same file: every
// write is a BEGIN IMMEDIATE transaction, so writers queue on SQLite's
// write lock (for up to 5 s) and readers never wait in WAL mode.
type Store struct {
	path string
	// write has one connection that opens every transaction with BEGIN
	// IMMEDIATE, so a write transaction holds the write lock from its
	// first read and two of them never deadlock on lock upgrades.
	write *sql.DB
	// read serves the store's own reads; query serves users' SQL. Both are
	// opened mode=ro, so SQLite itself refuses writes on them, and they are
	// separate pools so that session state a user's statement leaves on a
	// connection (a PRAGMA, a temp table) never reaches the store's reads.
	read  *sql.DB
	query *sql.DB

	// access is accessQuery prepared once on read: it runs on every
	// request of the authenticated lane.
	accessOnce sync.Once
	access     *sql.Stmt
	accessErr  error
}

// Open opens the SQLite database at path, creating it when missing, and
// migrates it to the current schema. path is a file path, not a URI; it
// must be a file on a local file system (WAL mode needs shared memory).
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, &kilolock.InvalidError{Code: "invalid_store_url", Message: "sqlite store: empty database path", Hint: "give a file path, e.g. kilolock.db"}
	}
	if strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
		return nil, &kilolock.InvalidError{
			Code:    "invalid_store_url",
			Message: fmt.Sprintf("sqlite store: %q is not a file path", path),
			Hint:    "give a file path; an in-memory database cannot be shared by the store's connections",
		}
	}
	s := &Store{path: path}
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busyTimeout.Milliseconds())

	var err error
	s.write, err = sql.Open("sqlite", fileURI(path)+"?"+pragmas+"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %v", path, err)
	}
	s.write.SetMaxOpenConns(1)
	s.write.SetMaxIdleConns(1)
	s.write.SetConnMaxIdleTime(0)
	s.write.SetConnMaxLifetime(0)
	if err := s.migrate(ctx); err != nil {
		s.write.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}

	// The file exists and is in WAL mode now, as the read-only pools need.
	ro := fileURI(path) + "?mode=ro&" + pragmas + "&_pragma=query_only(1)"
	s.read, _ = sql.Open("sqlite", ro)
	s.read.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	s.read.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))
	s.query = sql.OpenDB(connector{queryDriver, ro})
	s.query.SetMaxOpenConns(4)
	s.query.SetMaxIdleConns(2)
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	return s, nil
}

// fileURI makes path an SQLite "file:" URI, escaping the characters URI
// parsing would otherwise take for syntax.
func fileURI(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path)
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Ping reports whether the database answers (ErrUnavailable if not). It
// reads the file, so a file gone or damaged under the store fails it.
func (s *Store) Ping(ctx context.Context) error {
	var version int
	if err := s.read.QueryRowContext(ctx, "SELECT max(version) FROM kl_schema_version").Scan(&version); err != nil {
		return translate("ping", err)
	}
	return nil
}

// Close releases the store's connections. The store must not be used
// afterwards; a second Close does nothing.
func (s *Store) Close() error {
	var errs []error
	if s.access != nil {
		errs = append(errs, s.access.Close())
	}
	for _, db := range []*sql.DB{s.query, s.read, s.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite store: %v", err)
	}
	return nil
}

// update runs fn in a write transaction (BEGIN IMMEDIATE) and commits it
// when fn returns nil; it rolls back on an error or a panic.
func (s *Store) update(ctx context.Context, op string, fn func(tx *sql.Tx) error) (err error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return translate(op, err)
	}
	defer func() {
		if p := recover(); p != nil {
			tx.Rollback()
			panic(p)
		}
		if err != nil {
			tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return translate(op, err)
	}
	if err := tx.Commit(); err != nil {
		return translate(op, err)
	}
	return nil
}

// view runs fn in a read transaction, so that the reads it makes see one
// version of the database.
func (s *Store) view(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return translate(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return translate(op, err)
	}
	return nil
}

// timeFormat is how timestamps are stored: UTC, fixed-width microseconds.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// now returns the current time as the store keeps it: UTC, microseconds
// (the precision PostgreSQL keeps too, so both stores read back the same).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored timestamp %q: %v", s, err)
	}
	return t, nil
}

// queryDriver opens the connections of users' queries. Beyond mode=ro and
// query_only, an authorizer on each lets a statement do nothing but read:
// SELECT, the transaction the store opens around it, functions but
// load_extension, the PRAGMAs that only describe the schema, and reads of
// kilolock.QueryRelations; a table (tokens, payloads…) only through one of
// those views. Writes, DDL, ATTACH and DETACH are refused.
var queryDriver = func() *sqlite.Driver {
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		a, ok := c.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the sqlite driver has no authorizer")
		}
		return a.RegisterAuthorizer(queryAuthorizer)
	})
	return d
}()

// introspection are the PRAGMAs a query may call with an argument: they
// describe the schema and change nothing.
var introspection = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_info": true, "index_xinfo": true,
	"index_list": true, "foreign_key_list": true,
}

// readable are what a query may read directly: kilolock.QueryRelations
// (a read through one of the views names it as the view), the schema, and
// the table-valued functions that read only their arguments.
var readable = func() map[string]bool {
	m := map[string]bool{"sqlite_master": true, "sqlite_schema": true, "json_each": true, "json_tree": true}
	for _, r := range kilolock.QueryRelations {
		m[r] = true
	}
	return m
}()

func queryAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, _, view string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRecursive, sqlite.AuthTransaction:
		return sqlite.AuthorizerOK
	case sqlite.AuthRead:
		// A table a statement reads no column of (count(*) through a
		// view) comes without the view's name, and gives away no value.
		if readable[view] || readable[arg1] || strings.HasPrefix(arg1, "pragma_") || arg2 == "" {
			return sqlite.AuthorizerOK
		}
	case sqlite.AuthFunction:
		if !strings.EqualFold(arg2, "load_extension") {
			return sqlite.AuthorizerOK
		}
	case sqlite.AuthPragma:
		if arg2 == "" || introspection[strings.ToLower(arg1)] {
			return sqlite.AuthorizerOK
		}
	}
	return sqlite.AuthorizerDeny
}

// connector opens connections of a constructed driver for sql.OpenDB.
type connector struct {
	d   *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/sqlstore"
)

var _ kilolock.Store = (*Store)(nil)

// busyTimeout is how long a write waits for another process that holds the
// database's write lock before the store answers ErrUnavailable. A variable
// so that tests can shorten it.
var busyTimeout = 5 * time.Second

// pageCacheKiB bounds the page cache of each connection (SQLite's default
// is 2,000 KiB), outside the Go heap: the store keeps up to a dozen
// connections open, and the file's pages stay in the OS's cache anyway, so
// a smaller one costs reads little and keeps kld's memory near what it
// holds (2 MiB less at the peak of a 10,000-instance state, 7 MiB at
// 100,000; internal/e2e BenchmarkKLDMemory).
const pageCacheKiB = 512

// Store is a kilolock.Store in one SQLite database file. It is safe for
// concurrent use, and several processes may open the same file: every
// write is a BEGIN IMMEDIATE transaction, so writers queue on SQLite's
// write lock (for up to 5 s) and readers never wait in WAL mode; locks
// and unlocks that queue for the write connection share a transaction
// (lockbatch.go). Its operations are sqlstore's; this package gives them
// SQLite's dialect.
type Store struct {
	*sqlstore.Store
	d    *dialect
	path string
	// schema is what Open's migration did.
	schema sqlstore.SchemaChange
	// query serves users' SQL, opened like read (see dialect), and a pool
	// of its own so that session state a user's statement leaves on a
	// connection (a PRAGMA, a temp table) never reaches the store's reads.
	query *sql.DB
	// tenant serves tenants' SQL (QueryScoped): the main database opened
	// read-only, each connection with its tenant tables in its temp
	// schema, whose columns are tenantTables, beside empty tables named
	// as main's others (tenantShadows).
	tenant        *sql.DB
	tenantTables  []tenantTable
	tenantShadows []string
}

// dialect is SQLite's sqlstore.Dialect.
type dialect struct {
	// write has one connection that opens every transaction with BEGIN
	// IMMEDIATE, so a write transaction holds the write lock from its
	// first read and two of them never deadlock on lock upgrades.
	write *pool
	// read serves the store's own reads, opened mode=ro, so SQLite itself
	// refuses writes on it.
	read *pool
	// pool is read as a Tx, for single statements.
	pool *tx
	// lazyLocks is WithLazyLockSync.
	lazyLocks bool
	// locks are the locks and unlocks waiting for the write connection
	// (lockbatch.go).
	locks lockQueue
	// text moves the text index's queue into it (textindex.go), once
	// the schema queues it; nil before.
	text *textIndexer
}

// storeDriver opens the store's own connections, with kl_now(): the
// current time as the store keeps it (the shared SQL's {now}), and
// kl_trigrams(text): the query of the text index for text (the shared
// SQL's {textmatch}).
var storeDriver = func() *sqlite.Driver {
	d := &sqlite.Driver{}
	d.MustRegisterScalarFunction("kl_now", 0, func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		return time.Now().UTC().Format(timeFormat), nil
	})
	d.MustRegisterDeterministicScalarFunction("kl_trigrams", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		text, _ := args[0].(string)
		return trigramQuery(text), nil
	})
	return d
}()

// trigramQuery is the FTS5 query of the objects whose text holds every
// trigram of text, each a quoted string ("" for a quote in it): the text
// index keeps no positions (detail=none, a third of a first write's time
// less), so it cannot match a phrase, and the trigrams in a row are a
// prefilter the caller's exact check confirms.
func trigramQuery(text string) string {
	r := []rune(text)
	var b strings.Builder
	for i := 0; i+3 <= len(r); i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(`"` + strings.ReplaceAll(string(r[i:i+3]), `"`, `""`) + `"`)
	}
	return b.String()
}

// Option configures Open.
type Option func(*options)

type options struct {
	ring      *keyring.Ring
	lazyLocks bool
}

// WithKeyring encrypts at rest with ring (see kilolock.KeyStore). Without
// it, a database that holds encrypted values is refused.
func WithKeyring(ring *keyring.Ring) Option { return func(o *options) { o.ring = ring } }

// WithLazyLockSync writes locks and unlocks without waiting for the disk
// (synchronous=NORMAL for their transactions; commits stay FULL): a
// Terraform write cycle, LOCK → POST → UNLOCK, then waits on one fsync
// instead of three. What it gives up is only a lock's or an unlock's
// survival of a power cut or an operating system crash (a crash of kld
// alone loses nothing; the next commit's fsync makes every lock and
// unlock before it durable too): after one, a lock taken just before may
// be gone, so its holder's POST is refused (409/423, Terraform keeps
// errored.tfstate to push), never taken over; or an unlock may be undone,
// and the state needs a force-unlock. No commit is ever lost or applied
// under a lock that was not held when it committed.
func WithLazyLockSync() Option { return func(o *options) { o.lazyLocks = true } }

// Open opens the SQLite database at path, creating it when missing, and
// migrates it to the current schema. path is a file path, not a URI; it
// must be a file on a local file system (WAL mode needs shared memory).
// A database whose encrypted values the keyring given (or none) cannot
// open is a *kilolock.KeyError.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
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
	d := &dialect{lazyLocks: o.lazyLocks}
	s := &Store{Store: sqlstore.New(d, false), d: d, path: path}
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=cache_size(-%d)", busyTimeout.Milliseconds(), pageCacheKiB)
	// temp_store(memory): a statement's journal (what undoes the
	// statement alone: every write of a table with triggers has one) is
	// kept in memory and emptied as the statement ends, where past 64 KiB
	// in a transaction SQLite wrote it to a file, a write call per page,
	// for every statement after (a first write's row inserts). It also
	// keeps the write connection's sorts in memory: a migration's index
	// over a large table is sorted there.
	d.write = &pool{db: sql.OpenDB(connector{storeDriver, fileURI(path) + "?" + pragmas +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=temp_store(memory)&_txlock=immediate"})}
	d.write.db.SetMaxOpenConns(1)
	d.write.db.SetMaxIdleConns(1)
	d.write.db.SetConnMaxIdleTime(0)
	d.write.db.SetConnMaxLifetime(0)
	if err := s.migrate(ctx); err != nil {
		d.write.close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}

	// The file exists and is in WAL mode now, as the read-only pools need.
	ro := fileURI(path) + "?mode=ro&" + pragmas + "&_pragma=query_only(1)"
	d.read = &pool{db: sql.OpenDB(connector{storeDriver, ro})}
	d.pool = &tx{p: d.read}
	d.read.db.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	d.read.db.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))
	s.query = sql.OpenDB(connector{queryDriver, ro})
	s.query.SetMaxOpenConns(4)
	s.query.SetMaxIdleConns(2)
	s.tenant = sql.OpenDB(connector{tenantDriver, fileURI(path) + "?mode=ro&" + pragmas})
	s.tenant.SetMaxOpenConns(4)
	s.tenant.SetMaxIdleConns(4)
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	var err error
	if s.tenantTables, s.tenantShadows, err = readTenantTables(ctx, d.read.db); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := s.UseKeyring(ctx, o.ring); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := s.FillInventory(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	// What a store that stopped left queued is indexed now.
	d.startTextIndexer()
	d.text.wake()
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
	var version int64
	if err := s.d.Pool().QueryRow(ctx, "SELECT max(version) FROM kl_schema_version").Scan(&version); err != nil {
		return s.d.Translate("ping", err)
	}
	return nil
}

// Close releases the store's connections. The store must not be used
// afterwards; a second Close does nothing.
func (s *Store) Close() error {
	var errs []error
	if s.d.text != nil {
		errs = append(errs, s.d.stopTextIndexer())
	}
	for _, db := range []*sql.DB{s.query, s.tenant} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	for _, p := range []*pool{s.d.read, s.d.write} {
		if p != nil {
			errs = append(errs, p.close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite store: %v", err)
	}
	return nil
}

// Write runs fn in a write transaction (BEGIN IMMEDIATE: it holds the
// database's write lock from the start) and commits it when fn returns
// nil; it rolls back on an error or a panic.
func (d *dialect) Write(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return d.writeTx(ctx, fn, d.text != nil)
}

// writeTx is Write; with probe it wakes the text indexer when the
// transaction queued changes of the text index (the indexer's own
// transactions know what they left).
func (d *dialect) writeTx(ctx context.Context, fn func(sqlstore.Tx) error, probe bool) (err error) {
	t, err := d.write.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	run := &tx{p: d.write, tx: t}
	defer run.done(context.WithoutCancel(ctx))
	defer func() {
		if p := recover(); p != nil {
			t.Rollback()
			panic(p)
		}
		if err != nil {
			t.Rollback()
		}
	}()
	if err := fn(run); err != nil {
		return err
	}
	var queued bool
	if probe {
		if err := run.QueryRow(ctx, sqlTextQueued).Scan(&queued); err != nil {
			return err
		}
	}
	if err := t.Commit(); err != nil {
		return err
	}
	if queued {
		d.text.wake()
	}
	return nil
}

// Read runs fn in a read transaction, so that the reads it makes see one
// version of the database.
func (d *dialect) Read(ctx context.Context, fn func(sqlstore.Tx) error) error {
	t, err := d.read.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	run := &tx{p: d.read, tx: t}
	defer run.done(context.WithoutCancel(ctx))
	defer t.Rollback()
	return fn(run)
}

// Pool runs single statements on the read connections.
func (d *dialect) Pool() sqlstore.Tx { return d.pool }

// queryDriver opens the connections of users' queries. Beyond mode=ro and
// query_only, an authorizer on each lets a statement do nothing but read:
// SELECT, the transaction the store opens around it, functions but
// load_extension, the PRAGMAs that only describe the schema, and reads of
// kilolock.QueryRelations; a table (tokens, payloads…) only through one of
// those views. Writes, DDL, ATTACH and DETACH are refused.
var queryDriver = authorizedDriver(queryAuthorizer)

// authorizedDriver opens connections with fn as their authorizer.
func authorizedDriver(fn sqlite.AuthorizerFn) *sqlite.Driver {
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error { return registerAuthorizer(c, fn) })
	return d
}

// registerAuthorizer installs fn as the authorizer of conn, a connection
// of the sqlite driver.
func registerAuthorizer(conn any, fn sqlite.AuthorizerFn) error {
	a, ok := conn.(sqlite.AuthorizerRegisterer)
	if !ok {
		return errors.New("the sqlite driver has no authorizer")
	}
	return a.RegisterAuthorizer(fn)
}

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
	// A table a statement reads no column of (count(*) through a
	// view) comes without the view's name, and gives away no value.
	if action == sqlite.AuthRead && (readable[view] || readable[arg1] || strings.HasPrefix(arg1, "pragma_") || arg2 == "") || allowedBesidesReads(action, arg1, arg2) {
		return sqlite.AuthorizerOK
	}
	return sqlite.AuthorizerDeny
}

// allowedBesidesReads is what users' statements may do other than read:
// select, recurse, the transaction the store opens, call functions but
// load_extension, and PRAGMAs that describe the schema.
func allowedBesidesReads(action sqlite.AuthorizerActionCode, arg1, arg2 string) bool {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRecursive, sqlite.AuthTransaction:
		return true
	case sqlite.AuthFunction:
		return !strings.EqualFold(arg2, "load_extension")
	case sqlite.AuthPragma:
		return arg2 == "" || introspection[strings.ToLower(arg1)]
	}
	return false
}

// connector opens connections of a constructed driver for sql.OpenDB.
type connector struct {
	d   *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.d }

package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

var (
	_ tenancy.TenantStore  = (*Store)(nil)
	_ kilolock.LeanUpserts = (*Store)(nil)
)

// LeanUpserts marks the store as reading upserts' objects through
// kilolock.Commit.Object (Commit, PrepareCommit and sealing all do).
func (*Store) LeanUpserts() {}

// Store is every operation of a kilolock.Store (but Query, Ping and Close)
// and of a tenancy.TenantStore, written once over a Dialect. store/sqlite
// and store/postgres embed it, and add those three.
type Store struct {
	d Dialect
	// resort: the database's order of text is not byte order for every
	// stored string (PostgreSQL's of escaped text), so reads that promise
	// byte order check it.
	resort bool
	// clock is what leases are compared with in locks and commits (nil:
	// the real time); RunStore methods take the caller's time instead.
	clock func() time.Time
	// seal encrypts at rest (nil: the store has no keyring; see
	// UseKeyring).
	seal *sealing
}

// SetClock makes the store compare apply runs' leases, in locks and
// commits, with now rather than the real time: for tests that move time,
// and for an Engine whose Options.Now is not the real time. Set it before
// the store is used.
func (s *Store) SetClock(now func() time.Time) { s.clock = now }

// leaseNow is the time leases are compared with.
func (s *Store) leaseNow() time.Time {
	if s.clock != nil {
		return s.clock().UTC()
	}
	return now()
}

// New returns the Store of d. With resort, reads that promise byte order
// of IDs and names put what they read in that order when the database's
// order differs.
func New(d Dialect, resort bool) *Store { return &Store{d: d, resort: resort} }

// Dialect is what differs between two SQL databases under the shared
// operations: how a transaction begins and takes the state's row lock,
// and what the driver's errors mean. Statements reach it as the shared SQL
// (see Spell); the Tx it gives turns them into its own.
type Dialect interface {
	// Write runs fn in a read-write transaction, committed when fn returns
	// nil; a state's row lock it takes ({forupdate}) is held to the end.
	// It runs fn again on a failure that asks for it (ErrRetry,
	// serialization failures), and returns fn's error untranslated.
	Write(ctx context.Context, fn func(Tx) error) error
	// Read runs fn in a read-only transaction: one snapshot for all its
	// statements.
	Read(ctx context.Context, fn func(Tx) error) error
	// Pool runs single statements outside a transaction.
	Pool() Tx
	// Translate turns a driver's error met during op into one a
	// kilolock.Store may return; the root package's errors, the store's
	// own (Own) and the context's pass through.
	Translate(op string, err error) error
}

// LockWriter is a Dialect that writes locks and unlocks otherwise than
// commits (SQLite: several in one transaction, with WithLazyLockSync
// without waiting for the disk).
type LockWriter interface {
	// WriteLock is Write for a lock's or an unlock's function, which may
	// share its transaction with others': fn's writes are kept when it
	// returns nil and the transaction commits, and only fn's are undone
	// when it fails. Once fn runs it runs to its end: its statements do
	// not stop when ctx ends.
	WriteLock(ctx context.Context, fn func(Tx) error) error
}

// Tx runs the shared SQL on one transaction (or, from Dialect.Pool, on
// the pool). Arguments are Go values: string, []byte, int64, bool,
// time.Time, nil; and lists for the list spellings of Spell ([]string,
// [][]byte, []any of row ids). Scan destinations are *string, *[]byte, *int64,
// *int, *bool, *time.Time (NULL is the zero time), *any and pointers to
// pointers of those for NULLs.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	// Send runs a batch: on PostgreSQL in one round trip, on SQLite one
	// statement after the other.
	Send(ctx context.Context, b *Batch) error
}

// Rows are the rows of a query, read with Next and Scan; Close ends them
// early.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the first row of a query; its Scan is ErrNoRows when there is none.
type Row interface{ Scan(dest ...any) error }

// ErrNoRows is a Row's Scan of a query that gave no row.
var ErrNoRows = errors.New("no rows in result set")

// ErrRetry asks Dialect.Write to run its function again: the state row
// vanished between creating it and locking it (a concurrent Delete).
var ErrRetry = errors.New("retry the transaction")

// Batch is statements sent together, each with the reader of its result,
// run in the order queued. An Insert of many rows may run after the
// batch's other statements (PostgreSQL loads it with COPY), so nothing
// queued may depend on it.
type Batch struct{ Items []Item }

// Item is one statement of a Batch: a query read row by row (Each), a
// statement whose rows affected Done gets, or (Table set) an insert of
// Rows rows into Columns of Table, which the dialect runs as it pays.
type Item struct {
	SQL     string
	Args    []any
	Each    func(Rows) error
	Done    func(rowsAffected int64) error
	Table   string
	Columns []string
	// Rows is the number of rows an insert writes, and Row gives the
	// values of row i: called once per row, in order, when the dialect
	// sends it, so that a large insert holds its rows' values a chunk at
	// a time, not all at once.
	Rows int
	Row  func(i int) []any
}

// Query queues a query whose every row each reads.
func (b *Batch) Query(each func(Rows) error, sql string, args ...any) {
	b.Items = append(b.Items, Item{SQL: sql, Args: args, Each: each})
}

// Exec queues a statement whose rows affected done gets.
func (b *Batch) Exec(done func(int64) error, sql string, args ...any) {
	b.Items = append(b.Items, Item{SQL: sql, Args: args, Done: done})
}

// Insert queues an insert of rows into columns of table; done gets the
// rows inserted.
func (b *Batch) Insert(done func(int64) error, table string, columns []string, rows [][]any) {
	b.InsertRows(done, table, columns, len(rows), func(i int) []any { return rows[i] })
}

// InsertRows queues an insert of n rows into columns of table, row(i)
// giving row i's values (see Item.Row); done gets the rows inserted.
func (b *Batch) InsertRows(done func(int64) error, table string, columns []string, n int, row func(i int) []any) {
	b.Items = append(b.Items, Item{Table: table, Columns: columns, Rows: n, Row: row, Done: done})
}

// Spell turns the shared SQL into a dialect's: $n placeholders become
// placeholder(n), and each {name} the spelling words[name] gives, with $n
// in it bound the same way (a {…} without a word, such as a regular
// expression's {5}, is left as it is). The shared SQL uses:
//
//	{now}        the current time, as the store keeps it, at each statement
//	{C}          a COLLATE clause for byte order, after an ORDER BY term
//	{forupdate}  a clause that locks the rows read, after a SELECT
//	{rowid}      a row's identity, for updates by row within a transaction
//	{rowidin $n} a condition: the row's identity is in the list $n
//	{texts $n}   a FROM item (column k) of the strings of list $n
//	{bytes $n}   the same of a list of byte strings
//	{textmatch $n} a condition, found through the text index: the
//	             current interval i's search_text holds the text $n
//	             (lowercase, of inventory.MinIndexedText characters or
//	             more), or may (a prefilter: every trigram of it)
//
// Results are kept: the shared SQL is a small, fixed set of strings.
type Spell struct {
	placeholder func(n int) string
	words       map[string]string
	cache       sync.Map // shared SQL → the dialect's
}

// NewSpell returns the spelling of a dialect.
func NewSpell(placeholder func(n int) string, words map[string]string) *Spell {
	return &Spell{placeholder: placeholder, words: words}
}

// Of returns sql in the dialect's spelling.
func (s *Spell) Of(sql string) string {
	if v, ok := s.cache.Load(sql); ok {
		return v.(string)
	}
	out := s.spell(sql)
	s.cache.Store(sql, out)
	return out
}

func (s *Spell) spell(sql string) string {
	var b strings.Builder
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '{':
			end := strings.IndexByte(sql[i:], '}')
			var word string
			var ok bool
			var arg string
			if end > 0 {
				var name string
				name, arg, _ = strings.Cut(sql[i+1:i+end], " ")
				word, ok = s.words[name]
			}
			if !ok { // not ours: a regular expression's {5}, say
				b.WriteByte(c)
				continue
			}
			b.WriteString(s.spell(strings.ReplaceAll(word, "$$", arg)))
			i += end
		case c == '$' && i+1 < len(sql) && '0' <= sql[i+1] && sql[i+1] <= '9':
			n := 0
			for i+1 < len(sql) && '0' <= sql[i+1] && sql[i+1] <= '9' {
				n = n*10 + int(sql[i+1]-'0')
				i++
			}
			b.WriteString(s.placeholder(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// now is the current time as the store keeps it: UTC, microseconds (what
// PostgreSQL keeps, so both stores read back the same).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// EachRow reads rows (unless err) to the end, calling fn for each.
func EachRow(rows Rows, err error, fn func(Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// write runs fn in a write transaction and translates its error.
func (s *Store) write(ctx context.Context, op string, fn func(Tx) error) error {
	return s.d.Translate(op, s.d.Write(ctx, fn))
}

// writeLock is write for locks and unlocks: through the dialect's
// WriteLock when it is a LockWriter.
func (s *Store) writeLock(ctx context.Context, op string, fn func(Tx) error) error {
	if lw, ok := s.d.(LockWriter); ok {
		return s.d.Translate(op, lw.WriteLock(ctx, fn))
	}
	return s.write(ctx, op, fn)
}

// read runs fn in a read transaction and translates its error.
func (s *Store) read(ctx context.Context, op string, fn func(Tx) error) error {
	return s.d.Translate(op, s.d.Read(ctx, fn))
}

// readValue runs fn in a read transaction and returns what it made: the
// zero value and the translated error when it fails.
func readValue[T any](ctx context.Context, s *Store, op string, fn func(Tx) (T, error)) (T, error) {
	return valueOf(ctx, s.read, op, fn)
}

// writeValue is readValue in a write transaction.
func writeValue[T any](ctx context.Context, s *Store, op string, fn func(Tx) (T, error)) (T, error) {
	return valueOf(ctx, s.write, op, fn)
}

func valueOf[T any](ctx context.Context, run func(context.Context, string, func(Tx) error) error, op string, fn func(Tx) (T, error)) (T, error) {
	var out T
	err := run(ctx, op, func(tx Tx) (err error) {
		out, err = fn(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// notFound is the ErrNotFound of a missing state.
func notFound(name string) error {
	return fmt.Errorf("state %q: %w", name, kilolock.ErrNotFound)
}

// missing is the ErrNotFound of a missing tenant record.
func missing(what, id string) error { return fmt.Errorf("%s %q: %w", what, id, kilolock.ErrNotFound) }

// corrupt is stored data the store cannot read back.
func corrupt(format string, args ...any) error {
	return &StoreError{Msg: fmt.Sprintf(format, args...)}
}

// StoreError is an error of the store's own making (not the driver's),
// such as stored data that cannot be decoded. Translate passes it through.
type StoreError struct{ Msg string }

func (e *StoreError) Error() string { return e.Msg }

// sqlStateExists is the query of whether state $1 exists.
const sqlStateExists = `SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`

// sqlStateID is the id of the state named $1, for statements sent before
// the id is known: PostgreSQL runs it once, as an InitPlan, SQLite once as
// a constant subquery, and both probe the indexes with its result.
const sqlStateID = `(SELECT id FROM states WHERE name = $1)`

// ofState reads, in one batch in one snapshot, whether the state called
// name exists and the rows of sql, scan making an item of each (keep false
// drops it); never nil. ErrNotFound when the state does not exist.
func ofState[T any](ctx context.Context, s *Store, op, name string, scan func(Rows, *T) (keep bool, err error), sql string, args ...any) ([]T, error) {
	out := []T{}
	err := s.read(ctx, op, func(tx Tx) error {
		out = out[:0]
		b := &Batch{}
		var exists bool
		b.Query(func(r Rows) error { return r.Scan(&exists) }, sqlStateExists, name)
		b.Query(func(r Rows) error {
			var x T
			keep, err := scan(r, &x)
			if keep {
				out = append(out, x)
			}
			return err
		}, sql, args...)
		if err := tx.Send(ctx, b); err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Own reports whether err is one of the errors a kilolock.Store returns
// as it is: the root package's sentinels and typed errors, and the store's
// own (StoreError). A Dialect's Translate passes them through.
func Own(err error) bool {
	var (
		se *StoreError
		ce *callerError
	)
	if errors.As(err, &se) || errors.As(err, &ce) {
		return true
	}
	for _, target := range []error{
		kilolock.ErrNotFound, kilolock.ErrLocked, kilolock.ErrLockMismatch, kilolock.ErrConflict,
		kilolock.ErrStale, kilolock.ErrInvalid, kilolock.ErrEncrypted, kilolock.ErrReadOnly,
		kilolock.ErrUnavailable, kilolock.ErrRefused, kilolock.ErrKey, kilolock.ErrQuotaExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// FirstRow is the Row of a query's rows (or of its error): its Scan reads
// the first row and closes them, ErrNoRows when there is none.
func FirstRow(rows Rows, err error) Row { return firstRow{rows, err} }

type firstRow struct {
	r   Rows
	err error
}

func (r firstRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.r.Close()
	if !r.r.Next() {
		if err := r.r.Err(); err != nil {
			return err
		}
		return ErrNoRows
	}
	if err := r.r.Scan(dest...); err != nil {
		return err
	}
	r.r.Close()
	return r.r.Err()
}

// callerError carries an error of a caller's function run inside a
// transaction (SnapshotEach's each) out of it as it is: Own, so Translate
// passes it through, and unwrapped by the operation.
type callerError struct{ err error }

func (c *callerError) Error() string { return c.err.Error() }
func (c *callerError) Unwrap() error { return c.err }

// callersOwn returns the caller's own error err carries, or err.
func callersOwn(err error) error {
	if ce, ok := errors.AsType[*callerError](err); ok {
		return ce.err
	}
	return err
}

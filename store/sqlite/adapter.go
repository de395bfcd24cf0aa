package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// spell is the shared SQL in SQLite's words: ?n placeholders, lists as
// JSON arrays read with json_each, the rowid, no row locks (a write
// transaction holds the database's write lock from its BEGIN IMMEDIATE),
// and the text index as an FTS5 table.
var spell = sqlstore.NewSpell(func(n int) string { return "?" + strconv.Itoa(n) }, map[string]string{
	"now":       "kl_now()",
	"C":         "",
	"forupdate": "",
	"rowid":     "rowid",
	"texts":     "(SELECT value AS k FROM json_each($$))",
	"bytes":     "(SELECT unhex(value) AS k FROM json_each($$))",
	"rowidin":   "rowid IN (SELECT value FROM json_each($$))",
	// The FTS5 index of trigrams (see migrations/0022_search_text.sql),
	// asked for the text's every trigram (kl_trigrams), and the rows
	// queued for it (textindex.go), each a candidate.
	"textmatch": `((i.state_id, i.instance_id) IN (SELECT r.state_id, r.instance_id FROM instance_text
		JOIN instance_text_rows r ON r.id = instance_text.rowid WHERE instance_text MATCH kl_trigrams($$))
		OR (i.state_id, i.instance_id) IN (SELECT state_id, instance_id FROM instance_text_rows WHERE pending IS NOT NULL))`,
})

// timeFormat is how timestamps are stored: UTC, fixed-width microseconds.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// pool is a connection pool with its statements, each prepared once.
type pool struct {
	db    *sql.DB
	stmts sync.Map // SQLite's SQL → *sql.Stmt
}

func (p *pool) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := p.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := p.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

func (p *pool) close() error {
	p.stmts.Range(func(_, st any) bool { st.(*sql.Stmt).Close(); return true })
	return p.db.Close()
}

// tx runs the shared SQL on a transaction of p, or on p itself when tx is
// nil, with statements prepared once for the pool. A statement first met
// within a transaction is prepared for it alone (preparing for the pool
// would wait for one of its connections, which the one of the write pool
// is not), and for the pool once the transaction is over (see done).
type tx struct {
	p       *pool
	tx      *sql.Tx
	pending []string
	// detached: the contexts its statements are given do not cancel them
	// (a batch of locks, lockbatch.go).
	detached bool
}

var _ sqlstore.Tx = (*tx)(nil)

// prepared returns the statement of the shared SQL query on t.
func (t *tx) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	query = spell.Of(query)
	if t.tx == nil {
		return t.p.stmt(ctx, query)
	}
	if st, ok := t.p.stmts.Load(query); ok {
		return t.tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	t.pending = append(t.pending, query)
	return t.tx.PrepareContext(ctx, query)
}

// done prepares for the pool the statements t met first, now that t's
// transaction is over and its connection free.
func (t *tx) done(ctx context.Context) {
	for _, q := range t.pending {
		t.p.stmt(ctx, q) // on failure, the next transaction prepares it again
	}
}

func (t *tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	ctx = detachedCtx(ctx, t.detached)
	var res sql.Result
	var err error
	if len(args) == 0 && t.tx != nil {
		// A migration, several statements: not one to keep prepared.
		res, err = t.tx.ExecContext(ctx, spell.Of(query))
	} else {
		var st *sql.Stmt
		if st, err = t.prepared(ctx, query); err == nil {
			res, err = st.ExecContext(ctx, values(args)...)
		}
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *tx) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	ctx = detachedCtx(ctx, t.detached)
	st, err := t.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	r, err := st.QueryContext(ctx, values(args)...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (t *tx) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	r, err := t.Query(ctx, query, args...)
	return sqlstore.FirstRow(r, err)
}

// Send runs the batch's statements one after the other.
func (t *tx) Send(ctx context.Context, b *sqlstore.Batch) error {
	ctx = detachedCtx(ctx, t.detached)
	for _, it := range b.Items {
		switch {
		case it.Table != "":
			st, err := t.prepared(ctx, sqlstore.InsertSQL(it.Table, it.Columns))
			if err != nil {
				return err
			}
			var n int64
			for i := range it.Rows {
				res, err := st.ExecContext(ctx, values(it.Row(i))...)
				if err != nil {
					return err
				}
				k, err := res.RowsAffected()
				if err != nil {
					return err
				}
				n += k
			}
			if err := it.Done(n); err != nil {
				return err
			}
		case it.Each != nil:
			r, err := t.Query(ctx, it.SQL, it.Args...)
			if err := sqlstore.EachRow(r, err, it.Each); err != nil {
				return err
			}
		default:
			n, err := t.Exec(ctx, it.SQL, it.Args...)
			if err != nil {
				return err
			}
			if it.Done != nil {
				if err := it.Done(n); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// values are args as SQLite keeps them: timestamps as text, lists as JSON
// arrays (byte strings in hex).
func values(args []any) []any {
	return sqlstore.MapArgs(args, func(a any) (any, bool) {
		switch a := a.(type) {
		case time.Time:
			return a.UTC().Format(timeFormat), true
		case []string, []any:
			return jsonText(a), true
		case [][]byte:
			hexes := make([]string, len(a))
			for j, b := range a {
				hexes[j] = hex.EncodeToString(b)
			}
			return jsonText(hexes), true
		}
		return nil, false
	})
}

func jsonText(v any) string {
	b, _ := json.Marshal(v) // strings and numbers: never fails
	return string(b)
}

type rows struct{ *sql.Rows }

func (r rows) Close() { r.Rows.Close() }

// Scan reads timestamps from their text; NULL is the zero time.
func (r rows) Scan(dest ...any) error {
	n := 0
	for _, d := range dest {
		if _, ok := d.(*time.Time); ok {
			n++
		}
	}
	if n == 0 {
		return r.Rows.Scan(dest...)
	}
	texts := make([]sql.NullString, n)
	times := make([]*time.Time, 0, n)
	for i, d := range dest {
		if p, ok := d.(*time.Time); ok {
			dest[i] = &texts[len(times)]
			times = append(times, p)
		}
	}
	if err := r.Rows.Scan(dest...); err != nil {
		return err
	}
	for i, p := range times {
		*p = time.Time{}
		if texts[i].Valid && texts[i].String != "" {
			t, err := time.Parse(time.RFC3339Nano, texts[i].String)
			if err != nil {
				return &sqlstore.StoreError{Msg: "sqlite: stored timestamp " + texts[i].String + ": " + err.Error()}
			}
			*p = t
		}
	}
	return nil
}

package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kilolock/kilolock/store/sqlstore"
)

// spell is the shared SQL in PostgreSQL's words: lists as arrays, the row
// lock of FOR UPDATE, byte order by the "C" collation, rows by their ctid,
// the text index through pg_trgm.
var spell = sqlstore.NewSpell(func(n int) string { return "$" + strconv.Itoa(n) }, map[string]string{
	"now":       "clock_timestamp()",
	"C":         ` COLLATE "C"`,
	"forupdate": " FOR UPDATE",
	"rowid":     "ctid",
	// The ctid alone, so that the plan is a TID scan whatever the
	// statistics (with "AND state_id = $1" a cached generic plan can walk
	// every current interval of the state instead).
	"rowidin": "ctid = ANY($$::tid[])",
	"texts":   "(SELECT unnest($$::text[]) AS k)",
	"bytes":   "(SELECT unnest($$::bytea[]) AS k)",
	// LIKE, which the pg_trgm index instance_intervals_text answers, with
	// the text's own wildcards escaped.
	"textmatch": `i.search_text LIKE '%' || replace(replace(replace($$::text, '\', '\\'), '%', '\%'), '_', '\_') || '%'`,
})

// copyThreshold is the number of rows from which an Insert loads them with
// COPY rather than in its batch: COPY costs a round trip of its own, but
// loads a first write of 10,000 instances several times faster than
// INSERT … SELECT FROM unnest(…), which materializes its arrays.
const copyThreshold = 500

// querier is what a pgx.Tx and a *pgxpool.Pool both do.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// tx runs the shared SQL on a transaction or the pool. Its strings travel
// escaped (see escapeText).
type tx struct{ q querier }

var _ sqlstore.Tx = tx{}

func (t tx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := t.q.Exec(ctx, spell.Of(sql), escapeArgs(args)...)
	return tag.RowsAffected(), err
}

func (t tx) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	r, err := t.q.Query(ctx, spell.Of(sql), escapeArgs(args)...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func (t tx) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	r, err := t.Query(ctx, sql, args...)
	return sqlstore.FirstRow(r, err)
}

// Send sends the batch in one round trip, then loads its big inserts with
// COPY.
func (t tx) Send(ctx context.Context, b *sqlstore.Batch) error {
	var (
		pb     pgx.Batch
		copies []sqlstore.Item
		sent   []sqlstore.Item
	)
	for _, it := range b.Items {
		switch {
		case it.Table != "" && it.Rows >= copyThreshold:
			copies = append(copies, it)
			continue
		case it.Table != "":
			sql, args := unnestInsert(it)
			pb.Queue(sql, args...)
		default:
			pb.Queue(spell.Of(it.SQL), escapeArgs(it.Args)...)
		}
		sent = append(sent, it)
	}
	if len(sent) > 0 {
		if err := t.read(ctx, &pb, sent); err != nil {
			return err
		}
	}
	for _, it := range copies {
		n, err := t.q.CopyFrom(ctx, pgx.Identifier{it.Table}, it.Columns, pgx.CopyFromSlice(it.Rows, func(i int) ([]any, error) {
			return escapeArgs(it.Row(i)), nil
		}))
		if err != nil {
			return err
		}
		if err := it.Done(n); err != nil {
			return err
		}
	}
	return nil
}

// read reads the results of the batch's statements.
func (t tx) read(ctx context.Context, pb *pgx.Batch, items []sqlstore.Item) error {
	br := t.q.SendBatch(ctx, pb)
	defer br.Close()
	for _, it := range items {
		if it.Each != nil {
			r, err := br.Query()
			if err := sqlstore.EachRow(rows{r}, err, it.Each); err != nil {
				return err
			}
			continue
		}
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if it.Done != nil {
			if err := it.Done(tag.RowsAffected()); err != nil {
				return err
			}
		}
	}
	return br.Close()
}

// unnestInsert is an Insert as one statement: the values of each column
// as one array, unnested server-side.
func unnestInsert(it sqlstore.Item) (string, []any) {
	casts := make([]string, len(it.Columns))
	cols := make([][]any, len(it.Columns))
	for i := range cols {
		cols[i] = make([]any, it.Rows)
	}
	for j := range it.Rows {
		for i, v := range it.Row(j) {
			cols[i][j] = v
		}
	}
	for i := range cols {
		casts[i] = "$" + strconv.Itoa(i+1) + "::" + arrayType(cols[i][0]) + "[]"
	}
	args := make([]any, len(cols))
	for i, c := range cols {
		args[i] = escapeArgs(c)
	}
	return "INSERT INTO " + it.Table + " (" + strings.Join(it.Columns, ", ") + ") SELECT * FROM unnest(" + strings.Join(casts, ", ") + ")", args
}

// arrayType is the element type of an array of values like v.
func arrayType(v any) string {
	switch v.(type) {
	case []byte:
		return "bytea"
	case bool:
		return "boolean"
	case int, int64:
		return "bigint"
	}
	return "text"
}

// textOID reports whether oid is a text type, whose values travel escaped.
func textOID(oid uint32) bool {
	switch oid {
	case pgtype.TextOID, pgtype.VarcharOID, pgtype.BPCharOID, pgtype.NameOID:
		return true
	}
	return false
}

type rows struct{ pgx.Rows }

// Scan unescapes text and takes a NULL timestamp for the zero time.
func (r rows) Scan(dest ...any) error {
	var nullable [8]*time.Time
	var times [8]*time.Time
	k := 0
	for i, d := range dest {
		if p, ok := d.(*time.Time); ok && k < len(times) {
			times[k] = p
			dest[i] = &nullable[k]
			k++
		}
	}
	if err := r.Rows.Scan(dest...); err != nil {
		return err
	}
	for i := range k {
		*times[i] = time.Time{}
		if nullable[i] != nil {
			*times[i] = nullable[i].UTC()
		}
	}
	fields := r.FieldDescriptions()
	for i, d := range dest {
		if i >= len(fields) || !textOID(fields[i].DataTypeOID) {
			continue
		}
		switch p := d.(type) {
		case *string:
			*p = unescapeText(*p)
		case **string:
			if *p != nil {
				s := unescapeText(**p)
				*p = &s
			}
		case *[]byte:
			if *p != nil {
				*p = unescapeBytes(*p)
			}
		}
	}
	return nil
}

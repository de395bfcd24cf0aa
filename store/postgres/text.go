package postgres

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kilolock/kilolock"
)

// PostgreSQL's text holds neither a NUL nor bytes that are not UTF-8, which
// a state may carry in a name, an index key or an attribute (OpenTofu
// writes `for_each = toset(["a\u0000b"])` without complaint), and which
// the SQLite store keeps as they are. So every string the store sends is
// escaped, and every string it reads back unescaped: a NUL, a DEL (the
// escape itself) and each byte of an invalid UTF-8 sequence travel as DEL
// and two hex digits. Other text, nearly all of it, is left alone and
// costs one scan. The escape keeps prefixes (an instance ID still begins
// with its address), so range scans over IDs find what they should; the
// byte order of escaped IDs can differ, so the reads that promise byte
// order sort what they read (see sortedByID).
//
// Users' queries see the escaped text.

const escapeByte = 0x7f

// needsEscape reports whether s would change under escapeText.
func needsEscape(s string) bool {
	return strings.IndexByte(s, 0) >= 0 || strings.IndexByte(s, escapeByte) >= 0 || !utf8.ValidString(s)
}

// escapeText is s as PostgreSQL's text can hold it.
func escapeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || r == 0 || r == escapeByte {
			b.WriteByte(escapeByte)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
			i++
			continue
		}
		b.WriteString(s[i : i+n])
		i += n
	}
	return b.String()
}

// unescapeText reverses escapeText.
func unescapeText(s string) string {
	if strings.IndexByte(s, escapeByte) < 0 {
		return s
	}
	unhex := func(c byte) (byte, bool) {
		switch {
		case '0' <= c && c <= '9':
			return c - '0', true
		case 'a' <= c && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == escapeByte && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, s[i])
	}
	return string(b)
}

// escapeArgs escapes the strings among args (string, *string and
// []string), leaving args itself as it is.
func escapeArgs(args []any) []any {
	out, copied := args, false
	for i, a := range args {
		var e any
		switch v := a.(type) {
		case string:
			if !needsEscape(v) {
				continue
			}
			e = escapeText(v)
		case *string:
			if v == nil || !needsEscape(*v) {
				continue
			}
			e = escapeText(*v)
		case []string:
			j := 0
			for j < len(v) && !needsEscape(v[j]) {
				j++
			}
			if j == len(v) {
				continue
			}
			w := make([]string, len(v))
			for k, s := range v {
				w[k] = escapeText(s)
			}
			e = w
		default:
			continue
		}
		if !copied {
			out, copied = append([]any(nil), args...), true
		}
		out[i] = e
	}
	return out
}

// unescapeDest unescapes the strings a scan wrote into dest.
func unescapeDest(dest []any) {
	for _, d := range dest {
		switch p := d.(type) {
		case *string:
			*p = unescapeText(*p)
		case **string:
			if *p != nil {
				s := unescapeText(**p)
				*p = &s
			}
		}
	}
}

// textTx is a pgx.Tx whose strings travel escaped (see escapeText): what
// the store's transactions run on.
type textTx struct{ pgx.Tx }

func (t textTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.Tx.Exec(ctx, sql, escapeArgs(args)...)
}

func (t textTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := t.Tx.Query(ctx, sql, escapeArgs(args)...)
	return textRows{rows}, err
}

func (t textTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return textRow{t.Tx.QueryRow(ctx, sql, escapeArgs(args)...)}
}

func (t textTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	for _, q := range b.QueuedQueries {
		q.Arguments = escapeArgs(q.Arguments)
	}
	return textBatch{t.Tx.SendBatch(ctx, b)}
}

func (t textTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return t.Tx.CopyFrom(ctx, table, columns, textCopy{src})
}

type textRow struct{ pgx.Row }

func (r textRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if err == nil {
		unescapeDest(dest)
	}
	return err
}

type textRows struct{ pgx.Rows }

func (r textRows) Scan(dest ...any) error {
	err := r.Rows.Scan(dest...)
	if err == nil {
		unescapeDest(dest)
	}
	return err
}

type textBatch struct{ pgx.BatchResults }

func (b textBatch) Query() (pgx.Rows, error) {
	rows, err := b.BatchResults.Query()
	return textRows{rows}, err
}

func (b textBatch) QueryRow() pgx.Row { return textRow{b.BatchResults.QueryRow()} }

type textCopy struct{ pgx.CopyFromSource }

func (c textCopy) Values() ([]any, error) {
	vals, err := c.CopyFromSource.Values()
	return escapeArgs(vals), err
}

// The reads that promise byte order of IDs and names get the database's
// order of their escaped text, which differs only around escaped bytes:
// these put them back in byte order when it does.

func sortInstances(ins []kilolock.Instance) {
	byID := func(a, b kilolock.Instance) int { return strings.Compare(a.ID(), b.ID()) }
	if !slices.IsSortedFunc(ins, byID) {
		slices.SortStableFunc(ins, byID)
	}
}

func sortOutputs(outs []kilolock.Output) {
	byName := func(a, b kilolock.Output) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(outs, byName) {
		slices.SortStableFunc(outs, byName)
	}
}

func sortIntervals(ivs []kilolock.InstanceInterval) {
	byFromID := func(a, b kilolock.InstanceInterval) int {
		return cmp.Or(cmp.Compare(a.ValidFrom, b.ValidFrom), strings.Compare(a.Instance.ID(), b.Instance.ID()))
	}
	if !slices.IsSortedFunc(ivs, byFromID) {
		slices.SortStableFunc(ivs, byFromID)
	}
}

func sortChanges(rs []kilolock.ChangeRecord) {
	byVersionKind := func(a, b kilolock.ChangeRecord) int {
		var ao, bo int
		if a.Output {
			ao = 1
		}
		if b.Output {
			bo = 1
		}
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(ao, bo), strings.Compare(a.ID, b.ID))
	}
	if !slices.IsSortedFunc(rs, byVersionKind) {
		slices.SortStableFunc(rs, byVersionKind)
	}
}

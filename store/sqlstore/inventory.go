package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/inventory"
)

var _ inventory.Store = (*Store)(nil)

// scanBatch is how many rows one statement of a scan reads: a scan in
// (state, instance) order reads batch after batch, each from where the
// last stopped, so that the planner, told how few rows are wanted, walks
// the index in order rather than sorting every match (a search by a
// common type wants its first page, not 100,000 rows), and no read
// transaction lasts the whole of a long scan.
const scanBatch = 1000

// ScanCurrent reads the current instance objects of many states, row by
// row (see inventory.Store). Its filters are the indexed ones: by type
// through instance_intervals_current_type, else state by state through
// instance_intervals_current.
func (s *Store) ScanCurrent(ctx context.Context, f inventory.ScanFilter, each func(*inventory.Row) bool) error {
	if f.Scope != nil && len(f.Scope.Prefixes) == 0 {
		return nil
	}
	for {
		sql, args := ScanSQL(f)
		if !f.ByType {
			sql += " LIMIT " + strconv.Itoa(scanBatch)
		}
		var (
			n    int
			last inventory.Cursor
			stop bool
		)
		err := s.read(ctx, "scan current objects", func(tx Tx) error {
			n, stop = 0, false
			rows, err := tx.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			var (
				r    inventory.Row
				body string
			)
			for rows.Next() {
				if err := rows.Scan(&r.StateID, &r.State, &r.Version, &r.InstanceID, &r.Address, &r.Module, &r.Mode, &r.Type, &r.Name, &r.Deposed, &body); err != nil {
					return err
				}
				n++
				last = inventory.Cursor{StateID: r.StateID, InstanceID: r.InstanceID}
				r.Object = []byte(body)
				if !each(&r) {
					stop = true
					return nil
				}
			}
			return rows.Err()
		})
		if err != nil || stop || f.ByType || n < scanBatch {
			return err
		}
		f.After = last
	}
}

// ScanSQL is the statement ScanCurrent runs for f, in the shared SQL, and
// its arguments: for the dialects' tests of its plans.
func ScanSQL(f inventory.ScanFilter) (string, []any) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Type != "" {
		where = append(where, "i.type = "+arg(f.Type))
	}
	if f.Name != "" {
		where = append(where, "i.name = "+arg(f.Name))
	}
	if f.Module != "" {
		where = append(where, "(i.module = "+arg(f.Module)+" OR i.module LIKE "+arg(likeEscape(f.Module)+".%")+` ESCAPE '\' OR i.module LIKE `+arg(likeEscape(f.Module)+"[%")+` ESCAPE '\')`)
	}
	if !f.Data {
		where = append(where, "i.mode = 'managed'")
	}
	if f.NoDeposed {
		where = append(where, "i.deposed = ''")
	}
	if f.Text != "" {
		where = append(where, "lower(p.body) LIKE "+arg("%"+likeEscape(f.Text)+"%")+` ESCAPE '\'`)
	}
	if len(f.StateLike) > 0 {
		var or []string
		for _, l := range f.StateLike {
			or = append(or, "s.name LIKE "+arg(l)+` ESCAPE '\'`)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if f.Scope != nil {
		prefixes := make([]string, len(f.Scope.Prefixes))
		for i, p := range f.Scope.Prefixes {
			prefixes[i] = likeEscape(p) + "%"
		}
		where = append(where, `EXISTS (SELECT 1 FROM {texts `+arg(prefixes)+`} AS sc WHERE s.name LIKE sc.k ESCAPE '\')`)
	}
	order := "i.state_id, i.instance_id{C}"
	if f.ByType {
		order = "i.type{C}, " + order
	} else if f.After.StateID > 0 {
		sid, iid := arg(f.After.StateID), arg(f.After.InstanceID)
		// A row value, which both databases bound an index range by (an
		// OR of the two comparisons PostgreSQL reads as a filter).
		where = append(where, "(i.state_id, i.instance_id{C}) > ("+sid+", "+iid+")")
	}
	sql := `SELECT i.state_id, s.name, s.current_version, i.instance_id, i.address, i.module, i.mode, i.type, i.name, i.deposed, p.body
		FROM instance_intervals i
		JOIN states s ON s.id = i.state_id
		JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
		WHERE i.valid_to IS NULL`
	for _, w := range where {
		sql += " AND " + w
	}
	return sql + " ORDER BY " + order, args
}

// likeEscape escapes LIKE's wildcards (and its escape, '\') in s.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

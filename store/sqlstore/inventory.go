package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/tenancy"
)

var _ inventory.Store = (*Store)(nil)

// scanBatch is the most rows one statement of a scan reads: a scan in
// (state, instance) order reads batch after batch, each from where the
// last stopped, so that the planner, told how few rows are wanted, walks
// the index in order rather than sorting every match (a search by a
// common type wants its first page, not 100,000 rows), and no read
// transaction lasts the whole of a long scan. The first batch is
// firstScanBatch rows, a page's worth (inventory.DefaultLimit and one),
// and each next one four times the last, up to scanBatch: a first page
// reads the objects of about a page, not of ten.
const (
	firstScanBatch = 128
	scanBatch      = 1000
)

// ScanCurrent reads the current instance objects of many states, row by
// row (see inventory.Store). Its filters are the indexed ones: by text
// through the text index, by type through
// instance_intervals_current_type, else state by state through
// instance_intervals_current.
func (s *Store) ScanCurrent(ctx context.Context, f inventory.ScanFilter, each func(*inventory.Row) bool) error {
	if f.Scope != nil && len(f.Scope.Prefixes) == 0 {
		return nil
	}
	for batch := firstScanBatch; ; batch = min(4*batch, scanBatch) {
		sql, args := ScanSQL(f)
		var (
			n    int
			last inventory.Cursor
		)
		stop, err := s.scanRows(ctx, "scan current objects", sql+" LIMIT "+strconv.Itoa(batch), args, func(r *inventory.Row) bool {
			n++
			last = inventory.Cursor{StateID: r.StateID, InstanceID: r.InstanceID}
			return each(r)
		})
		if err != nil || stop || n < batch {
			return err
		}
		f.After = last
	}
}

// scanRows runs sql, whose columns are rowColumns, in a read transaction,
// calling each with every row until it returns false (stop).
func (s *Store) scanRows(ctx context.Context, op, sql string, args []any, each func(*inventory.Row) bool) (stop bool, err error) {
	err = s.read(ctx, op, func(tx Tx) error {
		stop = false
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
			r.Object = []byte(body)
			if !each(&r) {
				stop = true
				return nil
			}
		}
		return rows.Err()
	})
	return stop, err
}

// rowColumns are the columns of an inventory.Row, from the current
// intervals i and their states s, but its body: that of payloads p
// joined (pBody), or looked up per row (bodyOf).
const (
	rowColumns = `i.state_id, s.name, s.current_version, i.instance_id, i.address, i.module, i.mode, i.type, i.name, i.deposed, `
	pBody      = `p.body`
	// A lookup, not a join, so that PostgreSQL counts a scan's rows by
	// the intervals' own statistics: it takes the join on (state_id,
	// hash) for a filter of independent columns and counts a few dozen
	// rows of 15,000, then sorts every match of a common type for what
	// it thinks is all of them, where walking the type's index in order
	// stops at the batch (0.6 s against 3 ms, 150 states of 1,000).
	bodyOf = `(SELECT p.body FROM payloads p WHERE p.state_id = i.state_id AND p.hash = i.hash)`
)

// duplicatesBatch is how many identity hashes one statement of
// ScanDuplicates reads the objects of.
const duplicatesBatch = 500

// ScanDuplicates reads the current objects another state records too
// (see inventory.Store) in two steps, each through
// instance_intervals_identity: the identity hashes each commit recorded
// that more than one state holds, grouped in the index's order, then the
// objects of those hashes, a batch at a time.
func (s *Store) ScanDuplicates(ctx context.Context, scope *tenancy.QueryScope, typ string, each func(*inventory.Row) bool) error {
	if scope != nil && len(scope.Prefixes) == 0 {
		return nil
	}
	var hashes [][]byte
	sql, args := DuplicatesSQL(scope, typ, nil)
	err := s.read(ctx, "group identity keys", func(tx Tx) error {
		hashes = hashes[:0]
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h []byte
			if err := rows.Scan(&h); err != nil {
				return err
			}
			hashes = append(hashes, h)
		}
		return rows.Err()
	})
	for len(hashes) > 0 && err == nil {
		batch := hashes[:min(duplicatesBatch, len(hashes))]
		hashes = hashes[len(batch):]
		sql, args := DuplicatesSQL(scope, typ, batch)
		var stop bool
		if stop, err = s.scanRows(ctx, "scan duplicated objects", sql, args, each); stop {
			return err
		}
	}
	return err
}

// DuplicatesSQL is a statement of ScanDuplicates, in the shared SQL, and
// its arguments: with hashes nil, the identity hashes more than one state
// of scope records; else the objects of those hashes (for the dialects'
// tests of its plans).
func DuplicatesSQL(scope *tenancy.QueryScope, typ string, hashes [][]byte) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// The index's own predicate, which each read of it repeats so that
	// the planner may use it.
	where := "i.valid_to IS NULL AND i.ident_key <> ''"
	if typ != "" {
		where += " AND i.type = " + arg(typ)
	}
	join := ""
	if scope != nil {
		where += " AND " + scopeWhere(scope, arg)
		join = " JOIN states s ON s.id = i.state_id"
	}
	if hashes == nil {
		return `SELECT i.ident_hash FROM instance_intervals i` + join + ` WHERE ` + where + `
			GROUP BY i.ident_hash HAVING count(DISTINCT i.state_id) > 1 ORDER BY i.ident_hash`, args
	}
	return `SELECT ` + rowColumns + pBody + ` FROM instance_intervals i
		JOIN states s ON s.id = i.state_id
		JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
		WHERE ` + where + ` AND i.ident_hash IN (SELECT k FROM {bytes ` + arg(hashes) + `} AS h)
		ORDER BY i.ident_hash, i.state_id, i.instance_id{C}`, args
}

// scopeWhere is the condition that a state s is in scope.
func scopeWhere(scope *tenancy.QueryScope, arg func(any) string) string {
	prefixes := make([]string, len(scope.Prefixes))
	for i, p := range scope.Prefixes {
		prefixes[i] = likeEscape(p) + "%"
	}
	return `EXISTS (SELECT 1 FROM {texts ` + arg(prefixes) + `} AS sc WHERE s.name LIKE sc.k ESCAPE '\')`
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
	if f.Text != "" {
		where = append(where, "{textmatch "+arg(f.Text)+"}")
	}
	if len(f.StateLike) > 0 {
		var or []string
		for _, l := range f.StateLike {
			or = append(or, "s.name LIKE "+arg(l)+` ESCAPE '\'`)
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if f.Scope != nil {
		where = append(where, scopeWhere(f.Scope, arg))
	}
	order := "i.state_id, i.instance_id{C}"
	if f.After.StateID > 0 {
		sid, iid := arg(f.After.StateID), arg(f.After.InstanceID)
		// A row value, which both databases bound an index range by (an
		// OR of the two comparisons PostgreSQL reads as a filter).
		where = append(where, "(i.state_id, i.instance_id{C}) > ("+sid+", "+iid+")")
	}
	sql := `SELECT ` + rowColumns + bodyOf + `
		FROM instance_intervals i
		JOIN states s ON s.id = i.state_id
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

// fillBatch is how many intervals one transaction of FillInventory
// fills.
const fillBatch = 1000

// FillInventory works out what the inventory reads of every current
// interval that has it not yet: the identity key (inventory.IdentityKey)
// and the search text (inventory.SearchText) of those current when the
// migration that added each ran, and of those a backup of an older
// release restored. A store calls it when it opens and after a restore;
// with nothing to fill it is one look at each of two empty indexes.
func (s *Store) FillInventory(ctx context.Context) error {
	err := s.fill(ctx, "identity keys", "i.ident_key IS NULL", func(b *Batch, r *pendingInterval) {
		key, hash := inventory.IdentityKey(r.mode, r.typ, r.deposed, []byte(r.body))
		// An interval closed since it was read keeps no key.
		b.Exec(nil, `UPDATE instance_intervals SET ident_key = $3, ident_hash = $4
			WHERE state_id = $1 AND instance_id = $2 AND valid_to IS NULL AND ident_key IS NULL`, r.stateID, r.instanceID, key, hash)
	})
	if err != nil {
		return err
	}
	return s.fill(ctx, "search text", "i.search_text IS NULL", func(b *Batch, r *pendingInterval) {
		b.Exec(nil, `UPDATE instance_intervals SET search_text = $3
			WHERE state_id = $1 AND instance_id = $2 AND valid_to IS NULL AND search_text IS NULL`, r.stateID, r.instanceID, inventory.SearchText([]byte(r.body)))
	})
}

// pendingInterval is a current interval FillInventory fills, with its
// object's clear copy.
type pendingInterval struct {
	stateID                        int64
	instanceID, mode, typ, deposed string
	body                           string
}

// fill queues set for every current interval that pending (a condition
// on the interval i, the predicate of an index) holds of, a batch at a
// time, until none is left: set must make pending false.
func (s *Store) fill(ctx context.Context, what, pending string, set func(*Batch, *pendingInterval)) error {
	var rows []pendingInterval
	for {
		err := s.read(ctx, "read intervals without "+what, func(tx Tx) error {
			rows = rows[:0]
			q, err := tx.Query(ctx, `SELECT i.state_id, i.instance_id, i.mode, i.type, i.deposed, p.body
				FROM instance_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
				WHERE i.valid_to IS NULL AND `+pending+` LIMIT `+strconv.Itoa(fillBatch))
			if err != nil {
				return err
			}
			defer q.Close()
			for q.Next() {
				var r pendingInterval
				if err := q.Scan(&r.stateID, &r.instanceID, &r.mode, &r.typ, &r.deposed, &r.body); err != nil {
					return err
				}
				rows = append(rows, r)
			}
			return q.Err()
		})
		if err != nil || len(rows) == 0 {
			return err
		}
		err = s.write(ctx, "fill "+what, func(tx Tx) error {
			b := &Batch{}
			for i := range rows {
				set(b, &rows[i])
			}
			return tx.Send(ctx, b)
		})
		if err != nil {
			return err
		}
	}
}

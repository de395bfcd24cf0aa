package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kilolock/kilolock/tenancy"
)

// The copies a tenant's statement reads (see tenantquery.go). Each tenant
// connection's temp schema holds:
//
//   - a table per tenancy.TenantQueryRelations, with the view's columns;
//   - kl_t_states, the ids and names of the scope's states;
//   - kl_t_copies, what each of those holds: the scope, the columns, and
//     main's data_version when it was copied;
//   - an empty table named as each other table and view of main.
//
// A copy is kept after its statement, for the next statement on the
// connection: when that one has the same scope and the database has not
// changed since (PRAGMA data_version), what it reads is there already.
// Before any statement, every copy of another scope, or of an older
// version of the database, is emptied or made again, so a statement
// never meets rows of a scope but its own.

// tenantTable is one of tenancy.TenantQueryRelations as a temp table:
// its columns and their declared types, as main's view has them.
type tenantTable struct {
	name           string
	columns, types []string
}

// readTenantTables reads the columns of tenancy.TenantQueryRelations
// from main's views, and the names of main's other tables and views,
// which tenant connections shadow.
func readTenantTables(ctx context.Context, db *sql.DB) (tables []tenantTable, shadows []string, err error) {
	names, err := columnOf(ctx, db, `SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return nil, nil, fmt.Errorf("tables of main: %w", err)
	}
	for _, name := range names {
		if !tenantReadable[name] {
			shadows = append(shadows, name)
		}
	}
	for _, r := range tenancy.TenantQueryRelations {
		t := tenantTable{name: r}
		if t.columns, err = columnOf(ctx, db, `SELECT name FROM pragma_table_info(?1, 'main') ORDER BY cid`, r); err == nil {
			t.types, err = columnOf(ctx, db, `SELECT type FROM pragma_table_info(?1, 'main') ORDER BY cid`, r)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("columns of %s: %w", r, err)
		}
		if !slices.Contains(t.columns, "state") || len(t.types) != len(t.columns) {
			return nil, nil, fmt.Errorf("view %s has no column state", r)
		}
		tables = append(tables, t)
	}
	return tables, shadows, nil
}

// columnOf is the first column of query's rows, as text.
func columnOf(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func ident(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// makeTenantTables makes conn's temp tables when it has none yet.
func (s *Store) makeTenantTables(ctx context.Context, conn *sql.Conn) error {
	var have int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM temp.sqlite_master WHERE type = 'table'`).Scan(&have); err != nil {
		return err
	}
	if have == len(s.tenantTables)+len(s.tenantShadows)+2 {
		return nil
	}
	stmts := []string{
		`CREATE TEMP TABLE IF NOT EXISTS kl_t_states (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`,
		`CREATE TEMP TABLE IF NOT EXISTS kl_t_copies (name TEXT PRIMARY KEY, scope TEXT NOT NULL, columns TEXT NOT NULL, data_version INTEGER NOT NULL)`,
	}
	for _, name := range s.tenantShadows {
		stmts = append(stmts, `CREATE TEMP TABLE IF NOT EXISTS `+ident(name)+` (shadow INTEGER)`)
	}
	for _, t := range s.tenantTables {
		cols := make([]string, len(t.columns))
		for i, c := range t.columns {
			cols[i] = strings.TrimSpace(ident(c) + " " + t.types[i])
		}
		stmts = append(stmts, `CREATE TEMP TABLE IF NOT EXISTS `+ident(t.name)+` (`+strings.Join(cols, ", ")+`)`)
	}
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// heldCopy is a row of kl_t_copies.
type heldCopy struct {
	scope, columns string
	version        int64
}

// fill makes conn's temp tables hold what rec says the statement reads of
// the rows of scope's states, and no row of another scope, in one read
// transaction, so that the copies agree with each other.
func (s *Store) fill(ctx context.Context, conn *sql.Conn, scope tenancy.QueryScope, rec reads) (err error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	// Read first, so that the copies are of this version or a later one.
	var version int64
	if err := tx.QueryRowContext(ctx, `PRAGMA main.data_version`).Scan(&version); err != nil {
		return err
	}
	held := map[string]heldCopy{}
	rows, err := tx.QueryContext(ctx, `SELECT name, scope, columns, data_version FROM temp.kl_t_copies`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		var h heldCopy
		if err := rows.Scan(&name, &h.scope, &h.columns, &h.version); err != nil {
			rows.Close()
			return err
		}
		held[name] = h
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	key := scopeKey(scope)
	fresh := func(name string) (heldCopy, bool) {
		h, ok := held[name]
		return h, ok && h.scope == key && h.version == version
	}
	copied := func(name string, columns []string) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO temp.kl_t_copies (name, scope, columns, data_version) VALUES (?1, ?2, ?3, ?4)`,
			name, key, strings.Join(columns, ","), version)
		return err
	}
	emptied := func(name string) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM temp.`+ident(name)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM temp.kl_t_copies WHERE name = ?1`, name)
		return err
	}

	if _, ok := fresh("kl_t_states"); !ok {
		if err := emptied("kl_t_states"); err != nil {
			return err
		}
		// A prefix "ws_….env_…." is the range [prefix, prefix with its
		// last dot made a slash), which the index on states.name finds.
		ranges := make([][2]string, len(scope.Prefixes))
		for i, p := range scope.Prefixes {
			ranges[i] = [2]string{p, strings.TrimSuffix(p, ".") + "/"}
		}
		bounds, err := json.Marshal(ranges)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO temp.kl_t_states (id, name)
			SELECT s.id, s.name FROM json_each(?1) AS p JOIN main.states AS s ON s.name >= p.value ->> 0 AND s.name < p.value ->> 1`, string(bounds)); err != nil {
			return err
		}
		if err := copied("kl_t_states", nil); err != nil {
			return err
		}
	}
	for _, t := range s.tenantTables {
		h, ok := fresh(t.name)
		read, reads := rec[t.name]
		if !reads {
			if _, exists := held[t.name]; exists && !ok {
				if err := emptied(t.name); err != nil {
					return err
				}
			}
			continue
		}
		var have []string
		if ok {
			have = strings.Split(h.columns, ",")
		}
		cols := []string{}
		for _, c := range t.columns {
			if c == "state" || read[c] || slices.Contains(have, c) {
				cols = append(cols, c)
			}
		}
		if ok && len(cols) == len(have) {
			continue // all there
		}
		if err := emptied(t.name); err != nil {
			return err
		}
		list := make([]string, len(cols))
		for i, c := range cols {
			list[i] = ident(c)
		}
		names := strings.Join(list, ", ")
		if _, err := tx.ExecContext(ctx, `INSERT INTO temp.`+ident(t.name)+` (`+names+`) SELECT `+names+
			` FROM main.`+ident(t.name)+` WHERE state IN (SELECT name FROM temp.kl_t_states)`); err != nil {
			return err
		}
		if err := copied(t.name, cols); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// scopeKey names scope's set of prefixes, whatever their order.
func scopeKey(scope tenancy.QueryScope) string {
	p := slices.Clone(scope.Prefixes)
	slices.Sort(p)
	return strings.Join(slices.Compact(p), ",")
}

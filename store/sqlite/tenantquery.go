package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"modernc.org/sqlite"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

var _ kilolock.ScopedQuerier = (*Store)(nil)

// A tenant's SQL runs on a connection of its own pool whose main database
// is opened read-only (mode=ro), so SQLite refuses any write to it. In the
// connection's temp schema kld keeps, for each of
// kilolock.TenantQueryRelations, a view of the same name over kl_t_NAME:
// the main view's own SELECT (read from sqlite_master, so it follows the
// migrations) filtered to the states whose names start with a prefix of
// the temp table kl_t_scope. Unqualified names find the temp views first.
//
// What keeps the statement inside its scope is the connection's
// authorizer, installed for it after kld has written the scope: it may
// read main's tables and views only through a kl_t_ definition (SQLite
// names the innermost view of every read), the temp views, the schema
// tables and the table-valued JSON functions; and it may not write, not
// even to temp (so neither kl_t_scope nor the views can change), nor
// ATTACH, nor call load_extension. Between queries a connection has an
// authorizer that refuses everything.

// tenantDriver opens the connections of tenants' queries; they refuse
// everything until QueryScoped installs its authorizers.
var tenantDriver = authorizedDriver(denyAll)

func denyAll(sqlite.AuthorizerActionCode, string, string, string, string) sqlite.AuthorizerReturnCode {
	return sqlite.AuthorizerDeny
}

// setUpAuthorizer lets kld's own statements build the scope: temp DDL and
// writes to temp, and reads; still no ATTACH, no writes to main.
func setUpAuthorizer(action sqlite.AuthorizerActionCode, _, _, db, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthAttach, sqlite.AuthDetach:
		return sqlite.AuthorizerDeny
	case sqlite.AuthInsert, sqlite.AuthDelete, sqlite.AuthUpdate:
		if db != "temp" {
			return sqlite.AuthorizerDeny
		}
	}
	return sqlite.AuthorizerOK
}

// tenantReadable are the temp views a tenant's statement reads by name.
var tenantReadable = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range kilolock.TenantQueryRelations {
		m[r] = true
		m[scopedPrefix+r] = true
	}
	return m
}()

const scopedPrefix = "kl_t_"

func tenantAuthorizer(action sqlite.AuthorizerActionCode, arg1, arg2, db, view string) sqlite.AuthorizerReturnCode {
	if action != sqlite.AuthRead {
		if allowedBesidesReads(action, arg1, arg2) {
			return sqlite.AuthorizerOK
		}
		return sqlite.AuthorizerDeny
	}
	switch {
	case strings.HasPrefix(view, scopedPrefix): // kld's scoped definitions
		return sqlite.AuthorizerOK
	case db == "temp" && tenantReadable[arg1]:
		return sqlite.AuthorizerOK
	case arg2 == "" && db == "":
		// The notice of a table in a FROM clause, without a column:
		// SQLite gives it without the view that names the table, for
		// tables inside kld's definitions too. It reads no value; what
		// it allows is a count of a table's rows (see doc.go).
		return sqlite.AuthorizerOK
	case arg1 == "sqlite_master" || arg1 == "sqlite_schema" || arg1 == "sqlite_temp_master" || arg1 == "sqlite_temp_schema",
		arg1 == "json_each" || arg1 == "json_tree", strings.HasPrefix(arg1, "pragma_"):
		return sqlite.AuthorizerOK
	}
	return sqlite.AuthorizerDeny
}

// authorize installs fn as conn's authorizer.
func authorize(conn *sql.Conn, fn sqlite.AuthorizerFn) error {
	return conn.Raw(func(dc any) error { return registerAuthorizer(dc, fn) })
}

// QueryScoped runs a tenant's statement as Query does, on views that show
// only the states of scope.
func (s *Store) QueryScoped(ctx context.Context, limits kilolock.QueryLimits, scope kilolock.QueryScope, query string, args ...any) (*kilolock.QueryResult, error) {
	l := limits.Resolved()
	qctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	res, err := s.runScoped(qctx, l, scope, query, args)
	if err != nil {
		return nil, sqlstore.ScopedError(queryError(ctx, qctx, l, err))
	}
	return res, nil
}

func (s *Store) runScoped(ctx context.Context, l kilolock.QueryLimits, scope kilolock.QueryScope, query string, args []any) (res *kilolock.QueryResult, err error) {
	conn, err := s.tenant.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer func() {
		if aerr := authorize(conn, denyAll); aerr != nil {
			// A connection whose authorizer cannot be reset is not reused.
			conn.Raw(func(any) error { return driver.ErrBadConn })
			err = errors.Join(err, aerr)
		} else if ctx.Err() != nil {
			// An interrupted statement can leave its transaction open on
			// the connection; the next tenant gets a fresh one.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if err := authorize(conn, setUpAuthorizer); err != nil {
		return nil, err
	}
	if err := setScope(ctx, conn, scope); err != nil {
		return nil, fmt.Errorf("set the query's scope: %w", err)
	}
	if err := authorize(conn, tenantAuthorizer); err != nil {
		return nil, err
	}
	return runQueryOn(ctx, conn, l, query, args)
}

var viewSQL = regexp.MustCompile(`(?is)^\s*CREATE\s+VIEW\s+"?\w+"?\s+AS\s+(.*)$`)

// setScope writes scope into conn's kl_t_scope, making the scoped views
// when the connection has none yet.
func setScope(ctx context.Context, conn *sql.Conn, scope kilolock.QueryScope) error {
	var have int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM temp.sqlite_master WHERE type = 'view' AND name LIKE 'kl\_t\_%' ESCAPE '\'`).Scan(&have); err != nil {
		return err
	}
	if have != len(kilolock.TenantQueryRelations) {
		if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE IF NOT EXISTS kl_t_scope (prefix TEXT NOT NULL)`); err != nil {
			return err
		}
		for _, r := range kilolock.TenantQueryRelations {
			var def string
			if err := conn.QueryRowContext(ctx, `SELECT sql FROM main.sqlite_master WHERE type = 'view' AND name = ?`, r).Scan(&def); err != nil {
				return fmt.Errorf("view %s: %w", r, err)
			}
			m := viewSQL.FindStringSubmatch(def)
			if m == nil {
				return fmt.Errorf("view %s: cannot read its definition", r)
			}
			for _, stmt := range []string{
				`DROP VIEW IF EXISTS temp.` + r,
				`DROP VIEW IF EXISTS temp.` + scopedPrefix + r,
				`CREATE TEMP VIEW ` + scopedPrefix + r + ` AS SELECT * FROM (` + m[1] + "\n" + `) AS v
					WHERE EXISTS (SELECT 1 FROM temp.kl_t_scope AS kl_scope WHERE substr(v.state, 1, length(kl_scope.prefix)) = kl_scope.prefix)`,
				`CREATE TEMP VIEW ` + r + ` AS SELECT * FROM temp.` + scopedPrefix + r,
			} {
				if _, err := conn.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("view %s: %w", r, err)
				}
			}
		}
	}
	prefixes, err := json.Marshal(append([]string{}, scope.Prefixes...))
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM temp.kl_t_scope`); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, `INSERT INTO temp.kl_t_scope (prefix) SELECT value FROM json_each(?)`, string(prefixes))
	return err
}

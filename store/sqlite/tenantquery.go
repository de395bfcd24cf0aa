package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
	"github.com/kilolock/kilolock/tenancy"
)

var _ tenancy.ScopedQuerier = (*Store)(nil)

// A tenant's SQL runs on a connection of its own pool whose main database
// is opened read-only (mode=ro), and reads nothing of it. In the
// connection's temp schema kld keeps a table of the same name for each of
// tenancy.TenantQueryRelations, with the same columns as the view (read
// from main, so they follow the migrations); unqualified names find the
// temp tables first. Before each statement kld makes them hold the rows
// of the scope's states, and of no other (tenantcopy.go).
//
// So the statement's expressions never meet a row of another tenant,
// whatever plan SQLite makes. Scoped views could not promise that: SQLite
// flattens a view into the statement and pushes the statement's WHERE
// terms down into subqueries, so a term that fails and quotes its value
// (json_extract with a bad path) ran on rows the scope was to hide; the
// MATERIALIZED hint on a CTE is, by SQLite's documentation, a non-binding
// hint, and a LIMIT that stops push-down is a rule of the planner of the
// day. A temp table holds the rows it was given and nothing else.
//
// The copy is bounded by what the statement reads: kld first prepares
// the statement (SQLite names to the authorizer every column it reads),
// then copies only those tables and columns, of the scope's states only
// (found through the index on states.name), and the statement runs; a
// copy still current from the connection's last statement of the same
// scope is not made again. The temp schema lives in SQLite's temp store:
// pages beyond the connection's cache go to a temporary file, not to
// memory.
//
// What keeps the statement inside the temp tables is the connection's
// authorizer, installed for it after kld has filled them: it may read
// the columns of those tables, the schema tables and the table-valued
// JSON functions, and nothing of main; it may not write, not even to temp
// (so the copy cannot change), nor ATTACH, nor call load_extension.
// Between queries a connection has an authorizer that refuses everything.
//
// SQLite also tells the authorizer of a table a statement names without
// reading a column (count(*)), but by the name as written, so that a
// table of main and a CTE of that name look alike; and a CTE may be
// named anything. So every other table and view of main has an empty
// temp table of its name, found first: the count of an unqualified name
// is one of a temp table or a CTE, and a name qualified with main. is
// refused.

// tenantDriver opens the connections of tenants' queries; they refuse
// everything until QueryScoped installs its authorizers.
var tenantDriver = authorizedDriver(denyAll)

func denyAll(sqlite.AuthorizerActionCode, string, string, string, string) sqlite.AuthorizerReturnCode {
	return sqlite.AuthorizerDeny
}

// setUpAuthorizer lets kld's own statements build and fill the temp
// tables: temp DDL and writes to temp, and reads; still no ATTACH, no
// writes to main.
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

// tenantReadable are the temp tables a tenant's statement reads.
var tenantReadable = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range tenancy.TenantQueryRelations {
		m[r] = true
	}
	return m
}()

// reads are the columns of the temp tables a statement reads, by table;
// a table it names without reading a column (count(*)) has none.
type reads map[string]map[string]bool

// tenantAuthorizer is the authorizer of a tenant's statement; it notes in
// rec, when not nil, what the statement reads.
func tenantAuthorizer(rec reads) sqlite.AuthorizerFn {
	return func(action sqlite.AuthorizerActionCode, arg1, arg2, db, view string) sqlite.AuthorizerReturnCode {
		if action == sqlite.AuthPragma && !introspection[strings.ToLower(arg1)] {
			// Not even page_count or data_version, which tell of
			// other tenants' writes.
			return sqlite.AuthorizerDeny
		}
		if action != sqlite.AuthRead {
			if allowedBesidesReads(action, arg1, arg2) {
				return sqlite.AuthorizerOK
			}
			return sqlite.AuthorizerDeny
		}
		switch {
		case arg1 == "sqlite_master" || arg1 == "sqlite_schema" || arg1 == "sqlite_temp_master" || arg1 == "sqlite_temp_schema",
			arg1 == "json_each" || arg1 == "json_tree", strings.HasPrefix(arg1, "pragma_") && introspection[arg1[len("pragma_"):]]:
			return sqlite.AuthorizerOK
		case strings.HasPrefix(arg1, "sqlite_") || strings.HasPrefix(arg1, "pragma_") || arg1 == "dbstat" || strings.HasPrefix(arg1, "kl_t_"):
			// sqlite_stat1, sqlite_dbpage and the like, which no temp
			// table shadows, the table-valued PRAGMAs and dbstat, which
			// tell of the whole file, and kld's own bookkeeping.
			return sqlite.AuthorizerDeny
		case db != "temp" && (db != "" || arg2 != ""):
			// main's, by any name or through any of its views.
			return sqlite.AuthorizerDeny
		case arg2 == "" || tenantReadable[arg1]:
			// The notice of an unqualified name (a temp table or a CTE),
			// or a column of a tenant table (within a CTE of the
			// statement too, which SQLite names as the view).
			if rec != nil && tenantReadable[arg1] {
				if rec[arg1] == nil {
					rec[arg1] = map[string]bool{}
				}
				if arg2 != "" {
					rec[arg1][arg2] = true
				}
			}
			return sqlite.AuthorizerOK
		}
		return sqlite.AuthorizerDeny
	}
}

// authorize installs fn as conn's authorizer.
func authorize(conn *sql.Conn, fn sqlite.AuthorizerFn) error {
	return conn.Raw(func(dc any) error { return registerAuthorizer(dc, fn) })
}

// QueryScoped runs a tenant's statement as Query does, on temp tables
// that hold only the rows of the states of scope. A statement that fails
// while it runs says why without any value it met (sqlstore.Redact); one
// SQLite cannot prepare says what SQLite says.
func (s *Store) QueryScoped(ctx context.Context, limits kilolock.QueryLimits, scope tenancy.QueryScope, query string, args ...any) (*kilolock.QueryResult, error) {
	l := limits.Resolved()
	qctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	res, err := s.runScoped(qctx, l, scope, query, args)
	if err != nil {
		tell := sqlstore.Redact
		if sqlstore.IsTextError(err) {
			tell = nil
		}
		return nil, sqlstore.ScopedError(queryError(ctx, qctx, l, err, tell))
	}
	return res, nil
}

func (s *Store) runScoped(ctx context.Context, l kilolock.QueryLimits, scope tenancy.QueryScope, query string, args []any) (res *kilolock.QueryResult, err error) {
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
	// The copy may hold values past the statement's byte cap (runQueryOn
	// sets it), which it refuses only if it reads them; each was a
	// value of a state kld took, so memory stays bounded.
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, math.MaxInt32); err != nil {
		return nil, err
	}
	if err := authorize(conn, setUpAuthorizer); err != nil {
		return nil, err
	}
	if err := s.makeTenantTables(ctx, conn); err != nil {
		return nil, fmt.Errorf("make the query's tables: %w", err)
	}
	rec := reads{}
	if err := authorize(conn, tenantAuthorizer(rec)); err != nil {
		return nil, err
	}
	st, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, sqlstore.TextError{Err: err}
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	if err := authorize(conn, setUpAuthorizer); err != nil {
		return nil, err
	}
	if err := s.fill(ctx, conn, scope, rec); err != nil {
		return nil, fmt.Errorf("copy the query's rows: %w", err)
	}
	if err := authorize(conn, tenantAuthorizer(nil)); err != nil {
		return nil, err
	}
	return runQueryOn(ctx, conn, l, query, args)
}

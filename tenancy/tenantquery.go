package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kilolock/kilolock"
)

// TenantQueryRelations are the relations a tenant's SQL may read: the
// documented views, showing only the rows of the states its credential
// may read. The audit log, which records every tenant, is not one, nor
// duplicate_objects, which counts every tenant's states.
var TenantQueryRelations = slices.DeleteFunc(slices.Clone(kilolock.QueryRelations), func(r string) bool { return r == "audit_log" || r == "duplicate_objects" })

// TenantQueryHint is the hint of a tenant's refused or malformed query.
var TenantQueryHint = "query the views " + strings.Join(TenantQueryRelations, ", ") +
	" with SELECT; they hold the states your token may read"

// QueryScope is what a tenant's query may see: the states whose internal
// names (TenantStateName) start with one of Prefixes, "ws_….env_…." each.
type QueryScope struct {
	Prefixes []string
}

// ScopeOf returns the scope of environments (workspace id, public id).
func ScopeOf(envs []Environment) QueryScope {
	s := QueryScope{Prefixes: []string{}}
	for _, e := range envs {
		s.Prefixes = append(s.Prefixes, e.WorkspaceID+"."+e.PublicID+".")
	}
	return s
}

// MaxScopePrefixes bounds the environments of one scope.
const MaxScopePrefixes = 10_000

// ScopedQuerier is the optional capability of a Store that runs a tenant's
// SQL: as Query does (read-only, within limits), but on relations that
// show only the states of scope, with TenantQueryRelations the only ones
// it may read. The scope is kept where the statement cannot change it
// (see each store), and checked by the database for every row.
type ScopedQuerier interface {
	QueryScoped(ctx context.Context, limits kilolock.QueryLimits, scope QueryScope, sql string, args ...any) (*kilolock.QueryResult, error)
}

// QueryScoped runs a tenant's read-only SQL, seeing only the states of
// scope, within the engine's QueryLimits. A store that cannot scope
// queries answers a *RefusedError (code query_scope_unsupported); a
// scope with a prefix that is not "ws_….env_…." is an *InvalidError.
func QueryScoped(ctx context.Context, e *kilolock.Engine, scope QueryScope, sql string, args ...any) (*kilolock.QueryResult, error) {
	sq, ok := e.Store().(ScopedQuerier)
	if !ok {
		return nil, &kilolock.RefusedError{Code: "query_scope_unsupported", Message: "this store cannot run a tenant's SQL scoped to its states", Hint: "use the SQLite or PostgreSQL store", Err: kilolock.ErrReadOnly}
	}
	if len(scope.Prefixes) > MaxScopePrefixes {
		return nil, &kilolock.InvalidError{Code: "invalid_scope", Message: fmt.Sprintf("a query scope holds at most %d environments", MaxScopePrefixes), Hint: "query with a credential that reaches fewer environments"}
	}
	for _, p := range scope.Prefixes {
		ws, rest, ok1 := strings.Cut(p, ".")
		env, tail, ok2 := strings.Cut(rest, ".")
		if !ok1 || !ok2 || tail != "" || kilolock.ValidID("workspace", ws) != nil || kilolock.ValidID("environment", env) != nil || !strings.HasPrefix(ws, "ws_") || !strings.HasPrefix(env, "env_") {
			return nil, &kilolock.InvalidError{Code: "invalid_scope", Message: fmt.Sprintf("%s is not a scope prefix", kilolock.Clip(p)), Hint: "a prefix is WORKSPACE_ID.ENV_PUBLIC_ID."}
		}
	}
	return sq.QueryScoped(ctx, e.QueryLimits(), scope, sql, args...)
}

// TenantQueryDenied is QueryDenied for a tenant's query.
func TenantQueryDenied(msg string) error {
	return &kilolock.RefusedError{Code: "query_denied", Message: "query: " + msg, Hint: TenantQueryHint, Err: kilolock.ErrReadOnly}
}

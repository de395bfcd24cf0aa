package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
	"github.com/kilolock/kilolock/tenancy"
)

var _ tenancy.ScopedQuerier = (*Store)(nil)

// A tenant's SQL runs as a login role of its own, kl_tenant_<db>, whose
// search_path is a schema of its own, kl_tenant (<schema>_kl_tenant beside
// a store schema other than public). There, each of
// tenancy.TenantQueryRelations is a security_barrier view over the
// store's view of that name, showing the rows of the states whose names
// start with a prefix that kl_query_scopes holds for the view's reader:
// its backend (pg_backend_pid(), which no statement can change) and the
// nonce kld set in the query's transaction (kl.query_nonce). kld writes
// those rows on its own connection before the statement and deletes them
// after it. The tenant role may read those views and nothing else of the
// database: not the store's views or tables (nor kl_query_scopes, which
// only the store's role reads), no file, no program. So a statement that
// sets kl.query_nonce to a guess sees nothing; one that changes
// search_path meets relations it may not read; RESET ROLE and
// set_config('role') find no other role to be; and security_barrier keeps
// its own conditions (a cast that fails and names its value) from running
// on rows of the scope's outside.

// Keys of kl_settings for the tenant role.
const (
	settingTenantRole     = "tenant_role"
	settingTenantPassword = "tenant_role_password"
)

// tenantSchema is the schema of the tenant views beside store schema.
func tenantSchema(schema string) string {
	if schema == "public" {
		return "kl_tenant"
	}
	return schema + "_kl_tenant"
}

// setUpTenantRole makes the tenant views and the tenant role.
func setUpTenantRole(ctx context.Context, tx sqlstore.Tx) (*queryRole, error) {
	return setUpRole(ctx, tx, roleKind{nameKey: settingTenantRole, passwordKey: settingTenantPassword, prefix: "kl_tenant_",
		grant: func(schema string) (string, []string) {
			return tenantSchema(schema), tenancy.TenantQueryRelations
		},
		prepare: makeTenantViews,
		after: func(ctx context.Context, tx sqlstore.Tx, role *queryRole, schema string) error {
			ident := pgx.Identifier{role.name}.Sanitize()
			if _, err := tx.Exec(ctx, `ALTER ROLE `+ident+` SET search_path = `+pgx.Identifier{tenantSchema(schema)}.Sanitize()); err != nil {
				return err
			}
			// Other tenants' statements run as this role too: where the
			// store's role may, their text is kept out of
			// pg_stat_activity.
			if _, err := tx.Exec(ctx, `SAVEPOINT kl_track`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `ALTER ROLE `+ident+` SET track_activities = off`); err != nil {
				_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT kl_track`)
				return err
			}
			_, err := tx.Exec(ctx, `RELEASE SAVEPOINT kl_track`)
			return err
		},
	})
}

// makeTenantViews makes (or replaces) the tenant schema's views.
func makeTenantViews(ctx context.Context, tx sqlstore.Tx, schema string) error {
	ts := pgx.Identifier{tenantSchema(schema)}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ts); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `REVOKE ALL ON SCHEMA `+ts+` FROM PUBLIC`); err != nil {
		return err
	}
	store := pgx.Identifier{schema}.Sanitize()
	for _, r := range tenancy.TenantQueryRelations {
		rel := pgx.Identifier{r}.Sanitize()
		if _, err := tx.Exec(ctx, `CREATE OR REPLACE VIEW `+ts+`.`+rel+` WITH (security_barrier) AS
			SELECT v.* FROM `+store+`.`+rel+` v
			WHERE v.state IN (SELECT s.name FROM `+store+`.states s JOIN `+store+`.kl_query_scopes q ON starts_with(s.name, q.prefix)
				WHERE q.pid = pg_backend_pid() AND q.nonce = current_setting('kl.query_nonce', true) AND q.expires_at > now())`); err != nil {
			return fmt.Errorf("tenant view %s: %w", r, err)
		}
	}
	return nil
}

// checkTenantSession refuses a tenant connection whose role could reach
// beyond the tenant views: what checkQuerySession refuses, and a role that
// may read the store's views or its scopes.
func checkTenantSession(schema string) func(ctx context.Context, conn *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		if err := checkQuerySession(ctx, conn); err != nil {
			return err
		}
		var role string
		var reads bool
		err := conn.QueryRow(ctx, `SELECT session_user, coalesce(has_table_privilege(to_regclass($1), 'SELECT'), false)
			OR coalesce(has_table_privilege(to_regclass($2), 'SELECT'), false) OR coalesce(has_table_privilege(to_regclass($3), 'SELECT'), false)`,
			pgx.Identifier{schema, "resources"}.Sanitize(), pgx.Identifier{schema, "kl_query_scopes"}.Sanitize(), pgx.Identifier{schema, "tokens"}.Sanitize()).Scan(&role, &reads)
		if err != nil {
			return err
		}
		if reads {
			return &kilolock.RefusedError{Code: "query_role_unsafe",
				Message: fmt.Sprintf("tenants' queries are off: their role %s may read the store's views or tables, so a tenant could see other tenants' states", role),
				Hint:    "revoke its privileges on the store's schema, or drop the role and let kld make it again (kl_tenant_…)"}
		}
		return nil
	}
}

// tenantPoolConfig is the pool of tenants' queries: the store's own
// connection settings with the tenant role's login.
func tenantPoolConfig(cfg *pgxpool.Config, role *queryRole, schema string) *pgxpool.Config {
	qcfg, _ := queryPoolConfig(cfg, "", role) // no URL to parse
	qcfg.AfterConnect = checkTenantSession(schema)
	return qcfg
}

// QueryScoped runs a tenant's statement as Query does, as the tenant role,
// on the tenant views, which show only the states of scope.
func (s *Store) QueryScoped(ctx context.Context, limits kilolock.QueryLimits, scope tenancy.QueryScope, query string, args ...any) (*kilolock.QueryResult, error) {
	if s.tenantPool == nil {
		return nil, s.tenantRefusal
	}
	res, err := s.runUser(ctx, s.tenantPool, limits, query, args, func(ctx context.Context, pid uint32, timeout time.Duration) (string, func(), error) {
		nonce := rand.Text()
		prefixes := append([]string{}, scope.Prefixes...)
		// The rows count until the statement's deadline and a little
		// more; a row of a kld that died is removed by the next query.
		_, err := s.pool.Exec(ctx, `INSERT INTO kl_query_scopes (pid, nonce, prefix, expires_at)
			SELECT $1, $2, p, now() + make_interval(secs => $4) FROM unnest($3::text[]) p`, int64(pid), nonce, prefixes, timeout.Seconds()+5)
		if err != nil {
			return "", nil, translate(err)
		}
		return nonce, func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = s.pool.Exec(cctx, `DELETE FROM kl_query_scopes WHERE (pid = $1 AND nonce = $2) OR expires_at < now()`, int64(pid), nonce)
		}, nil
	})
	if err != nil {
		return nil, sqlstore.ScopedError(err)
	}
	return res, nil
}

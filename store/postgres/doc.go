// Package postgres is the production kilolock.Store: PostgreSQL through
// pgx/v5. Any number of kld replicas may share one database; every
// invariant is checked inside the database transaction, under the state's
// row lock, never in one process's memory.
//
//	st, err := postgres.Open(ctx, "postgres://kilolock@db.internal/kilolock")
//	if err != nil {
//		return err // errors.Is(err, kilolock.ErrUnavailable) when unreachable
//	}
//	defer st.Close()
//	lock, err := st.Lock(ctx, "network", info, kilolock.LockOptions{Mode: kilolock.LockExclusive})
//
// # Schema
//
// The schema is sqlstore's (see there), in migrations/, applied in one
// transaction under pg_advisory_xact_lock, recording each in
// kl_schema_version, so replicas (or kld migrate) starting together apply
// each exactly once; a database a newer release migrated is refused with a
// *sqlstore.SchemaTooNewError naming both versions. kl_settings keeps the
// query role's login, readable by the store's role only.
//
// # Errors
//
// Driver errors are translated once (translate) and never cross the Store
// boundary: a server that cannot be reached, is shutting down or has no
// connection slots gives an error matching kilolock.ErrUnavailable;
// serialization failures and deadlocks are retried first. Query maps a
// refused write (SQLSTATE 25006) to kilolock.ErrReadOnly and any other
// rejected statement to kilolock.ErrInvalid.
//
// # Users' queries
//
// Query runs users' SQL as a login role of its own (kl_query_DB), made at
// Open when the store's role may, with a random password in kl_settings;
// it may read the views and audit_log and nothing else, and no connection
// of a superuser or of a role that may read tokens runs user SQL. See
// Query and docs/queries.md.
//
// A tenant's SQL (QueryScoped: kl query with a token) runs as another
// login role, kl_tenant_DB, on security_barrier views of the schema
// kl_tenant that show only the states of its scope; see tenantquery.go
// for what keeps it there. Its sessions share that role, so where the
// store's role is not a superuser (which turns track_activities off for
// it) a tenant can see another's statement text in pg_stat_activity while
// it runs, and cancel it (pg_cancel_backend); never its rows.
//
// # Caveats
//
// PostgreSQL's text holds neither NUL nor bytes that are not UTF-8: the
// store writes such strings escaped (DEL and two hex digits per byte) and
// reads them back exactly; users' queries see the escaped text. The views
// give NULL jsonb, and the object's text in raw_json, for an object jsonb
// cannot hold.
package postgres

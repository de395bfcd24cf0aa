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
// Open applies the numbered migrations embedded from migrations/ in one
// transaction under pg_advisory_xact_lock, recording each in
// kl_schema_version, so replicas starting together are safe. The relations
// and the columns users see are the SQLite store's:
//
//   - states: one row per state, with its current version, serial, lineage
//     and lock mode.
//   - state_versions: one row per version (its metadata, check_results);
//     version_raw: the posted document of the versions that keep it.
//   - payloads: compact JSON of instance and output objects, content
//     addressed by graph.Hash per state, written once (TEXT; the views cast
//     to jsonb).
//   - instance_intervals, output_intervals: which objects each version
//     holds. An object is in version v iff valid_from <= v AND (valid_to IS
//     NULL OR valid_to > v); a partial unique index keeps one current
//     interval per object.
//   - locks: the held locks, with the version and serial each holder read.
//   - rejected_commits: refused commits, for `kl conflicts`; they go with
//     their state.
//   - views for Query: resources, resource_dependencies, outputs,
//     resource_history, version_history, rejected_commit_history.
//   - kl_settings: the query role's login, readable by the store's role
//     only.
//
// A version costs rows in proportion to its changes, not to the state: see
// Commit for the WriteStats rule. What versions changed is read back at the
// same cost: ChangesSince range-scans the (state_id, valid_from) and
// (state_id, valid_to) indexes of the intervals, and HashesAt probes the
// primary key once per key, in custom and generic plans alike (see
// TestQueryPlans).
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
// # Caveats
//
// PostgreSQL's text holds neither NUL nor bytes that are not UTF-8: the
// store writes such strings escaped (DEL and two hex digits per byte) and
// reads them back exactly; users' queries see the escaped text. The views
// give NULL jsonb, and the object's text in raw_json, for an object jsonb
// cannot hold.
package postgres

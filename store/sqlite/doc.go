// Package sqlite is the embedded kilolock.Store: one SQLite database file,
// pure Go (modernc.org/sqlite, no cgo), nothing to set up.
//
//	st, err := sqlite.Open(ctx, "kilolock.db")
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	lock, err := st.Lock(ctx, "network", info, kilolock.LockOptions{Mode: kilolock.LockExclusive})
//
// # Basics
//
// Open creates the file when missing and applies the numbered migrations
// embedded from migrations/, in one write transaction with their rows in
// kl_schema_version. The database runs in WAL mode with foreign keys on and
// synchronous=FULL (a commit that returned survives a power cut).
//
// The Store keeps three connection pools on the file:
//
//   - one write connection; every write is a BEGIN IMMEDIATE transaction
//     that reads the state row and its locks, runs storekit.CheckLock or
//     kilolock.CheckCommit, and writes. Several processes may open one
//     file: their writes queue on SQLite's write lock, and a write that
//     waits longer than 5 s gives kilolock.ErrUnavailable. The locks and
//     unlocks that queue while it is busy run next, together: one
//     transaction, a savepoint each, one fsync (lockbatch.go);
//   - read connections, opened mode=ro, for State, History, Snapshot…;
//     every read runs in one transaction, so it sees one version;
//   - query connections for users' SQL (Query), opened mode=ro with
//     query_only and an authorizer that lets a statement only read the
//     views and audit_log (kilolock.QueryRelations): the database itself
//     refuses every write and every other table. A query is interrupted at
//     its deadline, and no value it builds may pass its byte cap;
//   - tenant connections for tenants' SQL (QueryScoped), opened mode=ro,
//     whose statements read temp tables holding a copy of the scope's rows
//     and nothing of the main database (see tenantquery.go).
//
// # Schema
//
// The schema is sqlstore's (see there), in migrations/; a database from a
// newer KiloLock is refused (a *sqlstore.SchemaTooNewError naming both
// versions).
//
// # Caveats
//
// The file must be on a local file system (WAL needs shared memory), and
// an in-memory database is refused: the pools could not share it. Query
// returns at most MaxQueryRows rows by default. Driver errors never leave the package:
// they are translated to kilolock's sentinels (see translate).
//
// The operator's Query can count the rows of a table it may not read
// (SELECT count(*) FROM tokens answers): SQLite tells the authorizer of a
// table a statement names without a column, and does so for the tables
// inside the views too, so the notice cannot be refused. It gives away how
// many rows there are, never their content. A tenant's statement cannot:
// every table of main has an empty temp table of its name.
//
// A tenant's statement pays for the copy of what it reads of its scope's
// rows (the columns it reads of the views it reads), in SQLite's temp
// store (a temporary file beyond a small cache), unless the connection
// still holds it from a statement of the same scope and the database has
// not changed since; see httpbackend's BenchmarkTenantQuery.
package sqlite

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
// embedded from migrations/, each in its own transaction with its row in
// kl_schema_version. The database runs in WAL mode with foreign keys on and
// synchronous=FULL (a commit that returned survives a power cut).
//
// The Store keeps three connection pools on the file:
//
//   - one write connection; every write is a BEGIN IMMEDIATE transaction
//     that reads the state row and its locks, runs kilolock.CheckLock or
//     kilolock.CheckCommit, and writes. Several processes may open one
//     file: their writes queue on SQLite's write lock, and a write that
//     waits longer than 5 s gives kilolock.ErrUnavailable;
//   - read connections, opened mode=ro, for State, History, Snapshot…;
//     every read runs in one transaction, so it sees one version;
//   - query connections for users' SQL (Query), opened mode=ro with
//     query_only and an authorizer that lets a statement only read the
//     views and audit_log (kilolock.QueryRelations): the database itself
//     refuses every write and every other table. A query is interrupted at
//     its deadline, and no value it builds may pass its byte cap.
//
// # Schema
//
// The relations and the columns users see are the PostgreSQL store's (see
// migrations/0001_init.sql): states, state_versions, version_raw, payloads
// (content-addressed compact JSON of instance and output objects),
// instance_intervals and output_intervals (an object is in version v iff
// valid_from <= v AND (valid_to IS NULL OR valid_to > v)), locks,
// rejected_commits (migrations/0002_rejected_commits.sql: refused commits,
// for `kl conflicts`), and the views resources, resource_dependencies,
// outputs, resource_history, version_history and rejected_commit_history.
// A version costs rows in proportion to its changes: a commit that changes
// 2 of 10,000 instances writes 8 rows (see Commit for how WriteStats
// counts). What versions changed is read back at the same cost:
// ChangesSince range-scans the (state_id, valid_from) and (state_id,
// valid_to) indexes of the intervals, and HashesAt probes the primary key
// once per key.
//
// # Caveats
//
// The file must be on a local file system (WAL needs shared memory), and
// an in-memory database is refused: the pools could not share it. Query
// returns at most MaxQueryRows rows by default. Driver errors never leave the package:
// they are translated to kilolock's sentinels (see translate).
package sqlite

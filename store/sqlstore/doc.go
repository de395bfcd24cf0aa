// Package sqlstore is every operation of the SQL stores, written once:
// store/sqlite and store/postgres embed its Store and give it a Dialect,
// which holds only what truly differs between the databases — how a
// transaction begins and takes a state's row lock (SQLite's BEGIN
// IMMEDIATE, PostgreSQL's SELECT … FOR UPDATE), how a Batch travels (one
// round trip on PostgreSQL, statement after statement on SQLite), how a big
// insert loads (COPY), the spelling of a few words of SQL (Spell:
// placeholders, lists of keys, row identities, byte order) and what the
// driver's errors mean. Users' queries (Query) stay with each store.
//
//	type dialect struct{ … }           // Write, Read, Pool, Translate
//	s := &Store{Store: sqlstore.New(d, false)}
//	v, stats, err := s.Commit(ctx, "network", commit)
//
// # Schema
//
// Both stores have the same relations and user-visible columns (each
// dialect's migrations/, applied by Migrate):
//
//   - states: one row per state, with its current version, serial, lineage
//     and lock mode; locks: the held locks, with what each holder read.
//   - state_versions: one row per version; version_raw: the posted document
//     of the versions that keep it.
//   - payloads: compact JSON of instance and output objects, content
//     addressed by graph.Hash per state, written once.
//   - instance_intervals, output_intervals: which objects each version
//     holds. An object is in version v iff valid_from <= v AND (valid_to IS
//     NULL OR valid_to > v); a partial unique index keeps one current
//     interval per object. A bound is a version number; once retention
//     pruned that version it reads as the next version kept (sqlKeptAt). A commit closes and opens intervals: it writes
//     rows in proportion to its changes, not to the state (see Commit).
//   - rejected_commits: refused commits, for `kl conflicts`.
//   - tenancy: workspaces, environments, workspace_members, tokens (hashes
//     only), token_grants, state_holds, audit_log.
//   - the views users query (kilolock.QueryRelations).
//
// What versions changed is read back at the same cost: ChangesSince
// range-scans the (state_id, valid_from) and (state_id, valid_to) indexes
// of the intervals, and HashesAt probes the primary key once per key (the
// stores' TestQueryPlans check both databases' plans).
package sqlstore

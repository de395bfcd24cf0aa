// Package storetest is the conformance suite every kilolock.Store must pass.
// A store's own test calls Run with a function that opens an empty store:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t testing.TB) kilolock.Store {
//			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "kl.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Run opens a store per group of tests (locks, commit rules, snapshots,
// history, deletion, queries, concurrency, write costs, changes, refused
// commits) and uses distinct state names within a group, so a store that is
// not quite empty — a shared database with a fresh schema per call, say —
// works too.
//
// What it pins down beyond the kilolock.Store documentation, so that every
// store behaves alike:
//   - Commit sets Version.Added, Changed, Removed and Instances itself,
//     counting instance objects against the parent: an upsert equal to the
//     current object is no change, and removing an absent ID is ignored.
//   - Timestamps read back Equal to what Lock and Commit returned (stores
//     truncate to microseconds before returning).
//   - Query answers JSON values as JSON text (string), booleans as bool, the
//     integers of any width; parameters are written $1, $2…; a refused write
//     is ErrReadOnly, a read beyond kilolock.QueryRelations a RefusedError
//     (query_denied) that is ErrReadOnly too, a statement the database
//     rejects is ErrInvalid; at most MaxQueryRows rows come back by default;
//     QueryLimits hold (query_timeout, query_too_large), and the memory a
//     refused query takes stays bounded.
//   - A state's strings are kept byte for byte, NULs and bytes that are not
//     UTF-8 included, and every view answers whatever a state holds.
//   - An optimistic state admits LockOptions.MaxHolders holders at most,
//     even under contention.
//   - A commit changing 2 instances of 1,000 writes at most 10 rows and
//     64 KiB (WriteStats).
//   - ChangesSince orders records by version, then instances before
//     outputs, then ID in byte order; a version that changed nothing has
//     none. HashesAt and Rejections never return nil maps or lists, and a
//     Rejection's Addresses is never nil.
//   - SetLockMode refuses while any lock is held even when the mode would
//     not change, and validates the mode before anything else.
package storetest

package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/sqlstore"
	"github.com/kilolock/kilolock/store/storetest"
)

func TestLockExclusiveOneWinner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stores int
	}{
		{"one store", 1},
		{"two stores", 2}, // two pools on one database: two kld replicas
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := testpg.URL(t)
			stores := make([]*Store, tc.stores)
			for i := range stores {
				stores[i] = openURL(t, url)
			}
			ctx := context.Background()
			// Round 0 races on a state nobody created yet; round 1 on one
			// that exists and was just unlocked.
			for round := range 2 {
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					winners []string
					errs    []error
				)
				start := make(chan struct{})
				for g := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						id := fmt.Sprintf("lock-%d-%d", round, g)
						_, err := stores[g%len(stores)].Lock(ctx, "race", lockInfo(id), kilolock.LockOptions{Mode: kilolock.LockExclusive})
						mu.Lock()
						defer mu.Unlock()
						if err == nil {
							winners = append(winners, id)
						} else {
							errs = append(errs, err)
						}
					}()
				}
				close(start)
				wg.Wait()
				if len(winners) != 1 {
					t.Fatalf("round %d: %d winners (%v), want exactly one; errors: %v", round, len(winners), winners, errs)
				}
				for _, err := range errs {
					var le *kilolock.LockedError
					if !errors.As(err, &le) || le.Holder.ID != winners[0] {
						t.Errorf("round %d: loser got %v, want a *LockedError naming %s", round, err, winners[0])
					}
				}
				st, err := stores[0].State(ctx, "race")
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Locks) != 1 || st.Locks[0].Info.ID != winners[0] {
					t.Fatalf("round %d: locks %+v, want only %s", round, st.Locks, winners[0])
				}
				released, err := stores[len(stores)-1].Unlock(ctx, "race", winners[0], kilolock.UnlockOptions{})
				if err != nil || len(released) != 1 || released[0].Info != lockInfo(winners[0]) {
					t.Fatalf("unlock: %v %+v", err, released)
				}
			}
		})
	}
}

func TestLockOptimistic(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if err := s.SetLockMode(ctx, "opt", kilolock.LockOptimistic); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Lock(ctx, "opt", lockInfo(fmt.Sprint("o", g)), kilolock.LockOptions{Mode: kilolock.LockExclusive})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("optimistic lock: %v", err)
		}
	}
	st, err := s.State(ctx, "opt")
	if err != nil || len(st.Locks) != 16 || st.LockMode != kilolock.LockOptimistic {
		t.Fatalf("state %+v, %v: want 16 optimistic holders", st, err)
	}
	if _, err := s.Lock(ctx, "opt", lockInfo("o3"), kilolock.LockOptions{}); !errors.Is(err, kilolock.ErrLocked) {
		t.Errorf("taking a held lock id again: %v, want ErrLocked", err)
	}
	released, err := s.Unlock(ctx, "opt", "", kilolock.UnlockOptions{Force: true})
	if err != nil || len(released) != 16 {
		t.Fatalf("force unlock all: %d released, %v", len(released), err)
	}
}

func TestLockErrors(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if _, err := s.Lock(ctx, "a", kilolock.LockInfo{}, kilolock.LockOptions{}); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("lock without id: %v, want ErrInvalid", err)
	}
	if _, err := s.Lock(ctx, "a", lockInfo("x"), kilolock.LockOptions{Mode: "bogus"}); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("bogus mode: %v, want ErrInvalid", err)
	}
	if _, err := s.Unlock(ctx, "missing", "x", kilolock.UnlockOptions{}); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("unlock of a missing state: %v, want ErrNotFound", err)
	}
	if _, err := s.State(ctx, "missing"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("State of a missing state: %v, want ErrNotFound", err)
	}
	if err := s.SetAllowLineageChange(ctx, "missing", true); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("SetAllowLineageChange of a missing state: %v, want ErrNotFound", err)
	}
	if _, err := s.Delete(ctx, "missing", kilolock.DeleteOptions{}); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("Delete of a missing state: %v, want ErrNotFound", err)
	}
	if _, err := s.Lock(ctx, "a", lockInfo("x"), kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Unlock(ctx, "a", "y", kilolock.UnlockOptions{})
	var me *kilolock.LockMismatchError
	if !errors.As(err, &me) || me.Holder.ID != "x" || me.Given != "y" {
		t.Errorf("unlock with another id: %v, want a *LockMismatchError naming x", err)
	}
	if _, err := s.Unlock(ctx, "a", "", kilolock.UnlockOptions{}); !errors.Is(err, kilolock.ErrLockMismatch) {
		t.Errorf("unlock with no id, no force: %v, want ErrLockMismatch", err)
	}
	if _, err := s.Unlock(ctx, "a", "x", kilolock.UnlockOptions{Force: true}); err != nil {
		t.Errorf("force unlock by id: %v", err)
	}
	if _, err := s.Unlock(ctx, "a", "x", kilolock.UnlockOptions{}); !errors.Is(err, kilolock.ErrLockMismatch) {
		t.Errorf("unlock of a released lock: %v, want ErrLockMismatch", err)
	}
}

func TestCommitRules(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	a := instance(t, "a", nil, "1")

	// A refused commit on a missing state leaves no state behind.
	if _, _, err := s.Commit(ctx, "st", commit(1, a)); !errors.Is(err, kilolock.ErrStale) {
		t.Fatalf("commit onto 1 of a new state: %v, want ErrStale", err)
	}
	if _, err := s.State(ctx, "st"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Fatalf("a refused commit created the state: %v", err)
	}
	v1, _ := mustCommit(t, s, "st", commit(0, a))
	if v1.Number != 1 || v1.Added != 1 || v1.Instances != 1 || v1.State != "st" || v1.ID == 0 || v1.Created.IsZero() {
		t.Fatalf("first version %+v", v1)
	}

	lock, err := s.Lock(ctx, "st", lockInfo("L"), kilolock.LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lock.BaseVersion != 1 || lock.BaseSerial != 1 {
		t.Errorf("lock base %d/%d, want 1/1", lock.BaseVersion, lock.BaseSerial)
	}
	c := commit(1, instance(t, "a", nil, "2"))
	for _, tc := range []struct {
		name   string
		modify func(c *kilolock.Commit)
		want   error
	}{
		{"stale parent", func(c *kilolock.Commit) { c.Parent = 0 }, kilolock.ErrStale},
		{"no lock id while locked", func(c *kilolock.Commit) {}, kilolock.ErrLocked},
		{"another lock id", func(c *kilolock.Commit) { c.LockID = "other" }, kilolock.ErrLockMismatch},
		{"serial not above the lock's base", func(c *kilolock.Commit) { c.LockID = "L"; c.Version.Serial = 1 }, kilolock.ErrConflict},
		{"other lineage", func(c *kilolock.Commit) { c.LockID = "L"; c.Version.Lineage = "lin-2" }, kilolock.ErrConflict},
		{"hash of another object", func(c *kilolock.Commit) {
			c.LockID = "L"
			c.Upserts[0].Hash = instance(t, "a", nil, "3").Hash
		}, kilolock.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := *c
			cc.Upserts = append([]kilolock.Instance(nil), c.Upserts...)
			tc.modify(&cc)
			if _, ws, err := s.Commit(ctx, "st", &cc); !errors.Is(err, tc.want) || ws != (kilolock.WriteStats{}) {
				t.Errorf("got %v (%+v), want %v and no writes", err, ws, tc.want)
			}
		})
	}
	h, err := s.History(ctx, "st", kilolock.HistoryOptions{})
	if err != nil || len(h) != 1 {
		t.Fatalf("refused commits wrote versions: %v %v", h, err)
	}

	// The lineage guard gives way when an operator allows it, and Force
	// skips the serial guard but not the lock.
	if err := s.SetAllowLineageChange(ctx, "st", true); err != nil {
		t.Fatal(err)
	}
	c2 := commit(1, instance(t, "a", nil, "2"))
	c2.LockID, c2.Version.Lineage = "L", "lin-2"
	v2, _ := mustCommit(t, s, "st", c2)
	if v2.LockID != "L" || v2.Changed != 1 || v2.Added != 0 || v2.Instances != 1 {
		t.Errorf("second version %+v", v2)
	}
	c3 := commit(2)
	c3.Force, c3.Version.Serial = true, 1
	if _, _, err := s.Commit(ctx, "st", c3); !errors.Is(err, kilolock.ErrLocked) {
		t.Errorf("forced commit while locked: %v, want ErrLocked", err)
	}
	c3.LockID = "L"
	if _, _, err := s.Commit(ctx, "st", c3); err != nil {
		t.Errorf("forced commit under the lock: %v", err)
	}
	st, err := s.State(ctx, "st")
	if err != nil || st.Current != 3 || st.Serial != 1 || st.Lineage != "lin-1" || st.CurrentID == 0 {
		t.Errorf("state %+v, %v", st, err)
	}
}

// TestConcurrentCommits races 16 writers, half through another Store, onto
// the same parent: exactly one lands each round, the others are stale.
func TestConcurrentCommits(t *testing.T) {
	url := testpg.URL(t)
	stores := []*Store{openURL(t, url), openURL(t, url)}
	ctx := context.Background()
	for parent := range int64(20) {
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := commit(parent, instance(t, fmt.Sprint("w", g), nil, fmt.Sprint(parent)))
				_, _, err := stores[g%2].Commit(ctx, "race", c)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case !errors.Is(err, kilolock.ErrStale):
					t.Errorf("loser got %v, want ErrStale", err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("parent %d: %d commits landed, want 1", parent, wins)
		}
	}
	// The instance counts were read under the row lock, after the
	// previous winner committed.
	history, err := stores[0].History(ctx, "race", kilolock.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range history {
		snap, err := stores[1].Snapshot(ctx, "race", v.Number)
		if err != nil {
			t.Fatal(err)
		}
		if v.Instances != len(snap.Instances) {
			t.Errorf("version %d counts %d instances, holds %d", v.Number, v.Instances, len(snap.Instances))
		}
	}
}

func TestDelete(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	v1, _ := mustCommit(t, s, "gone", commit(0, instance(t, "a", nil, "1")))
	if _, err := s.Lock(ctx, "gone", lockInfo("L"), kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "gone", kilolock.DeleteOptions{}); !errors.Is(err, kilolock.ErrLocked) {
		t.Fatalf("Delete of a state locked by another = %v; want ErrLocked", err)
	}
	if _, err := s.Delete(ctx, "gone", kilolock.DeleteOptions{LockID: "L"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, "gone", kilolock.HistoryOptions{}); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("history after delete: %v", err)
	}
	var left int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM payloads) + (SELECT count(*) FROM instance_intervals) + (SELECT count(*) FROM locks)`).Scan(&left)
	if err != nil || left != 0 {
		t.Errorf("rows left after delete: %d %v", left, err)
	}
	v2, _ := mustCommit(t, s, "gone", commit(0, instance(t, "a", nil, "1")))
	if v2.ID == v1.ID || v2.Number != 1 {
		t.Errorf("recreated state's first version %+v reuses id %d", v2, v1.ID)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	url := testpg.URL(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), url)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent open: %v", err)
		}
	}
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		t.Fatal(err)
	}
	s := openURL(t, url)
	var count, latest int64
	err = s.pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM kl_schema_version`).Scan(&count, &latest)
	if n := int64(len(ms)); err != nil || count != n || latest != int64(ms[len(ms)-1].Version) {
		t.Errorf("kl_schema_version: %d %d %v, want %d migrations", count, latest, err, n)
	}
}

func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	_, err := Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2&sslmode=disable")
	if !errors.Is(err, kilolock.ErrUnavailable) {
		t.Fatalf("open of an unreachable server: %v, want ErrUnavailable", err)
	}
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	if errors.As(err, &pe) || errors.As(err, &ce) {
		t.Errorf("a driver error crossed the boundary: %#v", err)
	}
	if _, err := Open(ctx, "postgres://%zz"); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("open of a malformed url: %v, want ErrInvalid", err)
	}

	s := openStore(t)
	s.pool.Close() // as if the server went away
	if _, err := s.State(ctx, "x"); !errors.Is(err, kilolock.ErrUnavailable) {
		t.Errorf("State on a closed pool: %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, kilolock.ErrUnavailable) {
		t.Errorf("Ping on a closed pool: %v, want ErrUnavailable", err)
	}
}

// Upgrading a database to schema 16 keeps every version and marks those
// recorded as merges merged; the view shows the column.
func TestMigrateMergedWrites(t *testing.T) {
	const version = 16 // migrations/0016_merged_writes.sql
	ctx := context.Background()
	url := testpg.URL(t)
	s := openURL(t, url)
	for serial := uint64(1); serial <= 2; serial++ {
		c := &kilolock.Commit{Parent: int64(serial - 1), Version: kilolock.Version{Serial: serial, Lineage: "l", Source: kilolock.SourceApply}}
		if _, _, err := s.Commit(ctx, "up", c); err != nil {
			t.Fatal(err)
		}
	}
	// The database as schema 15 left it, the second version a merge.
	for _, q := range append(undoClientEncryption, []string{
		`DROP VIEW version_history CASCADE`,
		`ALTER TABLE state_versions DROP COLUMN merged`,
		`CREATE VIEW version_history AS SELECT s.name AS state, v.number, v.serial, v.source, v.actor, v.lock_id,
			v.base_serial, v.created_at, v.added, v.changed, v.removed, v.instance_count
			FROM state_versions v JOIN states s ON s.id = v.state_id`,
		// A view on it, as the tenant lane's are: the upgrade replaces
		// version_history under its dependents.
		`CREATE VIEW kl_test_dependent AS SELECT v.* FROM version_history v`,
		`UPDATE state_versions SET source = 'merge' WHERE number = 2`,
		fmt.Sprintf(`DELETE FROM kl_schema_version WHERE version >= %d`, version),
	}...) {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s = openURL(t, url)
	h, err := s.History(ctx, "up", kilolock.HistoryOptions{})
	if err != nil || len(h) != 2 {
		t.Fatalf("history after the upgrade: %v, %v", h, err)
	}
	if h[0].Source != kilolock.SourceMerge || !h[0].Merged || h[1].Source != kilolock.SourceApply || h[1].Merged {
		t.Errorf("after the upgrade: @2 %s merged %v, @1 %s merged %v; want the merge marked merged, the apply not", h[0].Source, h[0].Merged, h[1].Source, h[1].Merged)
	}
	var merged bool
	if err := s.pool.QueryRow(ctx, `SELECT merged FROM version_history WHERE state = 'up' AND number = 2`).Scan(&merged); err != nil || !merged {
		t.Errorf("version_history.merged of @2 = %v, %v; want true", merged, err)
	}
}

// undoDuplicatesByKey takes a database back from the schema whose
// duplicate_objects reads the identity keys to the one before: the view
// as its own migration made it.
var undoDuplicatesByKey = []string{storetest.Migration(migrations, "0021_duplicate_objects.sql")}

// undoSearchText takes a database back from the schema that added the
// search text (and the view after it) to the one before.
var undoSearchText = append(slices.Clone(undoDuplicatesByKey), storetest.UndoSearchTextPostgres...)

// undoSpellings takes a database back from the schema that added
// instance_intervals' spellings (and the search text after it) to the one
// before.
var undoSpellings = append(slices.Clone(undoSearchText), []string{
	`ALTER TABLE instance_intervals DROP COLUMN spelling`,
	`ALTER TABLE instance_intervals DROP COLUMN canonical_hash`,
}...)

// undoIdentityKeys takes a database back from the schema that added the
// identity keys (and the spellings after it) to the one before.
var undoIdentityKeys = append(slices.Clone(undoSpellings), storetest.UndoIdentityKeys...)

// undoClientEncryption takes a database back from schema 25 (the view
// by identity keys), 24 (search text), 23 (instance spellings), 22 (identity keys), 19 (state moves), 18 (trust policies) and 17 (client-side
// encryption) to the one before: how a test of an earlier migration makes
// the schema that migration met.
var undoClientEncryption = append(undoIdentityKeys, []string{
	`DROP TABLE state_moves`,    // schema 19
	`DROP TABLE trust_policies`, // schema 18, which follows
	`ALTER TABLE states DROP COLUMN require_client_encryption`,
	`ALTER TABLE states DROP COLUMN client_encryption`,
	`ALTER TABLE environments DROP COLUMN require_client_encryption`,
}...)

// Upgrading a database to schema 17 marks a state whose current version is
// client-side encrypted as such (its key providers unknown until its next
// write), and requires encryption of no state or environment.
func TestMigrateClientEncryption(t *testing.T) {
	checkUpgrade(t, 17, undoClientEncryption, storetest.CommitFormats, storetest.CheckClientEncryptionUpgrade) // migrations/0017_client_encryption.sql
}

// Upgrading a database to schema 23 leaves the intervals written before
// without spellings: a write on them parses in full and is exact.
func TestMigrateSpellings(t *testing.T) {
	checkUpgrade(t, 23, undoSpellings, storetest.CommitSpelled, storetest.CheckSpellingsUpgrade) // migrations/0023_instance_spellings.sql
}

// Upgrading a database to schema 22 works out the identity keys of the
// current intervals as the store opens: the duplicates find what states
// recorded before.
func TestMigrateIdentityKeys(t *testing.T) {
	checkUpgrade(t, 22, undoIdentityKeys, storetest.SeedIdentityKeys, storetest.CheckIdentityKeys) // migrations/0022_identity_keys.sql
}

// Upgrading a database to schema 24 works out the search text of the
// current intervals as the store opens: a search by text finds what
// states recorded before.
func TestMigrateSearchText(t *testing.T) {
	checkUpgrade(t, 24, undoSearchText, storetest.SeedSearchText, storetest.CheckSearchText) // migrations/0024_search_text.sql
}

// Upgrading a database to schema 25 makes duplicate_objects read the
// identity keys: it lists what states recorded before, as it did.
func TestMigrateDuplicatesByKey(t *testing.T) {
	checkUpgrade(t, 25, undoDuplicatesByKey, storetest.SeedIdentityKeys, storetest.CheckDuplicateView) // migrations/0025_duplicate_objects_by_key.sql
}

// checkUpgrade writes with before, takes the database back to the schema
// before version with undo, reopens it (which migrates it from version
// on) and checks it with after.
func checkUpgrade(t *testing.T, version int, undo []string, before, after func(testing.TB, kilolock.Store)) {
	ctx := context.Background()
	url := testpg.URL(t)
	s := openURL(t, url)
	before(t, s)
	for _, q := range append(undo[:len(undo):len(undo)], fmt.Sprintf(`DELETE FROM kl_schema_version WHERE version >= %d`, version)) {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	after(t, openURL(t, url))
}

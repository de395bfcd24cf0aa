package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/store/sqlstore"
	"github.com/kilolock/kilolock/store/storetest"
)

func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPageCacheBounded: every pool's connections keep a page cache of
// pageCacheKiB, not SQLite's default 2,000 KiB each.
func TestPageCacheBounded(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	// (The tenant pool, opened with the same settings, refuses PRAGMAs.)
	for name, db := range map[string]*sql.DB{"write": s.d.write.db, "read": s.d.read.db, "query": s.query} {
		var size int
		if err := db.QueryRowContext(t.Context(), "PRAGMA cache_size").Scan(&size); err != nil {
			t.Fatalf("%s pool: %v", name, err)
		}
		if size != -pageCacheKiB {
			t.Errorf("%s pool: cache_size %d, want %d (KiB)", name, size, -pageCacheKiB)
		}
	}
}

// A writer that another process keeps waiting past the busy timeout gets
// ErrUnavailable, not the driver's error.
func TestBusyIsUnavailable(t *testing.T) {
	defer func(d time.Duration) { busyTimeout = d }(busyTimeout)
	busyTimeout = 100 * time.Millisecond
	path := filepath.Join(t.TempDir(), "kl.db")
	s := openAt(t, path)

	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")

	_, _, err = s.Commit(t.Context(), "busy", &kilolock.Commit{Version: kilolock.Version{Serial: 1}})
	checkUnavailable(t, err)
	_, err = s.Lock(t.Context(), "busy", kilolock.LockInfo{ID: "a"}, kilolock.LockOptions{})
	checkUnavailable(t, err)
	// Readers are not held up by a writer.
	if _, err := s.States(t.Context()); err != nil {
		t.Errorf("States while another process writes: %v", err)
	}
}

func checkUnavailable(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, kilolock.ErrUnavailable) {
		t.Errorf("error %v is not ErrUnavailable", err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		t.Errorf("error %v carries the driver's error", err)
	}
}

// Two stores on one file (as two kld processes would be) serialize their
// commits: every commit lands once, numbers contiguous.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kl.db")
	stores := []*Store{openAt(t, path), openAt(t, path)}
	r := graph.Resource{Mode: "managed", Type: "terraform_data", Name: "w"}
	const writers, each = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := stores[w%2]
		wg.Go(func() {
			for i := range each {
				in, err := graph.NewInstance(r, fmt.Appendf(nil, `{"index_key":%d,"attributes":{}}`, w*each+i))
				if err != nil {
					errs <- err
					return
				}
				for {
					c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "l"}, Upserts: []graph.Instance{in}}
					if st, err := s.State(t.Context(), "shared"); err == nil {
						c.Parent, c.Version.Serial = st.Current, st.Serial+1
					}
					_, _, err := s.Commit(t.Context(), "shared", c)
					if errors.Is(err, kilolock.ErrStale) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	h, err := stores[1].History(t.Context(), "shared", kilolock.HistoryOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range h {
		if want := int64(writers*each - i); v.Number != want || v.Instances != int(want) {
			t.Errorf("history[%d] = version %d with %d instances, want %d", i, v.Number, v.Instances, want)
		}
	}
	if len(h) != writers*each {
		t.Errorf("%d versions, want %d", len(h), writers*each)
	}
}

// Open migrates once, says what it did, and refuses a database from a
// newer KiloLock naming both versions.
func TestMigrations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kl.db")
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		t.Fatal(err)
	}
	first := openAt(t, path)
	if got := first.Schema(); got.From != 0 || got.To != SchemaVersion() || len(got.Applied) != len(ms) || got.Applied[0] != ms[0].Name {
		t.Errorf("first Open: %+v, want 0 -> %d applying all %d migrations", got, SchemaVersion(), len(ms))
	}
	first.Close()
	s := openAt(t, path)
	if got := s.Schema(); got.From != SchemaVersion() || got.To != SchemaVersion() || len(got.Applied) != 0 {
		t.Errorf("second Open: %+v, want %d up to date, nothing applied", got, SchemaVersion())
	}
	var n, version int
	if err := s.d.write.db.QueryRow(`SELECT count(*), max(version) FROM kl_schema_version`).Scan(&n, &version); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || version != SchemaVersion() {
		t.Errorf("kl_schema_version has %d rows up to %d, want %d up to %d", n, version, len(ms), SchemaVersion())
	}
	if _, err := s.d.write.db.Exec(`INSERT INTO kl_schema_version (version, name, applied_at) VALUES (999, '0999_future.sql', '')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(t.Context(), path)
	var tooNew *sqlstore.SchemaTooNewError
	if !errors.As(err, &tooNew) || tooNew.Database != 999 || tooNew.Migration != "0999_future.sql" || tooNew.Known != SchemaVersion() {
		t.Fatalf("Open of a database from a newer KiloLock: %v, want a *SchemaTooNewError of 999 against %d", err, SchemaVersion())
	}
	for _, want := range []string{"999", "0999_future.sql", strconv.Itoa(SchemaVersion())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %s", err, want)
		}
	}
}

// What a read-only connection still allows is refused too.
func TestQueryAuthorizer(t *testing.T) {
	dir := t.TempDir()
	s := openAt(t, filepath.Join(dir, "kl.db"))
	for _, q := range []string{
		"ATTACH '" + filepath.Join(dir, "evil.db") + "' AS evil",
		"PRAGMA query_only = 0",
		"PRAGMA journal_mode = DELETE",
	} {
		if _, err := s.Query(t.Context(), kilolock.QueryLimits{}, q); !errors.Is(err, kilolock.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", q, err)
		}
	}
	for _, q := range []string{
		"VACUUM INTO '" + filepath.Join(dir, "evil.db") + "'",
		"COMMIT; VACUUM INTO '" + filepath.Join(dir, "evil.db") + "'",
		"SELECT 1; VACUUM INTO '" + filepath.Join(dir, "evil.db") + "'",
	} {
		if _, err := s.Query(t.Context(), kilolock.QueryLimits{}, q); err == nil {
			t.Errorf("%s succeeded", q)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.db")); err == nil {
		t.Error("a query created a file")
	}
	for _, q := range []string{"PRAGMA table_info(states)", "SELECT * FROM pragma_table_info('resources')", "PRAGMA journal_mode"} {
		if _, err := s.Query(t.Context(), kilolock.QueryLimits{}, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}

func TestOpenRefusesMemory(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:?cache=shared"} {
		if _, err := Open(t.Context(), path); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want ErrInvalid", path, err)
		}
	}
}

// Upgrading a database to schema 14 keeps every version and marks those
// recorded as merges merged; the view shows the column.
func TestMigrateMergedWrites(t *testing.T) {
	const version = 14 // migrations/0014_merged_writes.sql
	path := filepath.Join(t.TempDir(), "kl.db")
	s := openAt(t, path)
	for serial := uint64(1); serial <= 2; serial++ {
		c := &kilolock.Commit{Parent: int64(serial - 1), Version: kilolock.Version{Serial: serial, Lineage: "l", Source: kilolock.SourceApply}}
		if _, _, err := s.Commit(t.Context(), "up", c); err != nil {
			t.Fatal(err)
		}
	}
	// The database as schema 13 left it, the second version a merge.
	for _, q := range append(undoClientEncryption, []string{
		`DROP VIEW version_history`,
		`ALTER TABLE state_versions DROP COLUMN merged`,
		`CREATE VIEW version_history AS SELECT 1 AS number`,
		`UPDATE state_versions SET source = 'merge' WHERE number = 2`,
		fmt.Sprintf(`DELETE FROM kl_schema_version WHERE version >= %d`, version),
	}...) {
		if _, err := s.d.write.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s = openAt(t, path)
	h, err := s.History(t.Context(), "up", kilolock.HistoryOptions{})
	if err != nil || len(h) != 2 {
		t.Fatalf("history after the upgrade: %v, %v", h, err)
	}
	if h[0].Source != kilolock.SourceMerge || !h[0].Merged || h[1].Source != kilolock.SourceApply || h[1].Merged {
		t.Errorf("after the upgrade: @2 %s merged %v, @1 %s merged %v; want the merge marked merged, the apply not", h[0].Source, h[0].Merged, h[1].Source, h[1].Merged)
	}
	var merged bool
	if err := s.d.write.db.QueryRow(`SELECT merged FROM version_history WHERE state = 'up' AND number = 2`).Scan(&merged); err != nil || !merged {
		t.Errorf("version_history.merged of @2 = %v, %v; want true", merged, err)
	}
}

// undoTextQueue takes a database back from the schema that writes the
// text index a statement at a time to the one before: schema 22's
// triggers, which write it a row at a time.
var undoTextQueue = []string{
	`DROP TRIGGER instance_text_open`,
	`DROP TRIGGER instance_text_update`,
	`DROP TRIGGER instance_text_delete`,
	`DROP TABLE instance_text_gone`,
	`DROP INDEX instance_text_rows_pending`,
	`ALTER TABLE instance_text_rows DROP COLUMN pending`,
	triggersOf(storetest.Migration(migrations, "0022_search_text.sql")),
}

// triggersOf is the CREATE TRIGGER statements of a migration, its last.
func triggersOf(migration string) string {
	i := strings.Index(migration, "CREATE TRIGGER")
	if i < 0 {
		panic("no trigger in the migration")
	}
	return migration[i:]
}

// undoDuplicatesByKey takes a database back from the schema whose
// duplicate_objects reads the identity keys (and the text index's queue
// after it) to the one before: the view as its own migration made it.
var undoDuplicatesByKey = append(slices.Clone(undoTextQueue), `DROP VIEW duplicate_objects`, storetest.Migration(migrations, "0019_duplicate_objects.sql"))

// undoSearchText takes a database back from the schema that added the
// search text (and the view after it) to the one before.
var undoSearchText = append(slices.Clone(undoDuplicatesByKey), storetest.UndoSearchTextSQLite...)

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

// undoClientEncryption takes a database back from schema 24 (the text
// index's queue), 23 (the view by identity keys), 22 (search text), 21 (instance spellings), 20 (identity keys), 17 (state moves), 16 (trust policies) and 15 (client-side
// encryption) to the one before: how a test of an earlier migration makes
// the schema that migration met.
var undoClientEncryption = append(undoIdentityKeys, []string{
	`DROP TABLE state_moves`,    // schema 17
	`DROP TABLE trust_policies`, // schema 16, which follows
	`ALTER TABLE states DROP COLUMN require_client_encryption`,
	`ALTER TABLE states DROP COLUMN client_encryption`,
	`ALTER TABLE environments DROP COLUMN require_client_encryption`,
}...)

// Upgrading a database to schema 15 marks a state whose current version is
// client-side encrypted as such (its key providers unknown until its next
// write), and requires encryption of no state or environment.
func TestMigrateClientEncryption(t *testing.T) {
	checkUpgrade(t, 15, undoClientEncryption, storetest.CommitFormats, storetest.CheckClientEncryptionUpgrade) // migrations/0015_client_encryption.sql
}

// Upgrading a database to schema 21 leaves the intervals written before
// without spellings: a write on them parses in full and is exact.
func TestMigrateSpellings(t *testing.T) {
	checkUpgrade(t, 21, undoSpellings, storetest.CommitSpelled, storetest.CheckSpellingsUpgrade) // migrations/0021_instance_spellings.sql
}

// Upgrading a database to schema 20 works out the identity keys of the
// current intervals as the store opens: the duplicates find what states
// recorded before.
func TestMigrateIdentityKeys(t *testing.T) {
	checkUpgrade(t, 20, undoIdentityKeys, storetest.SeedIdentityKeys, storetest.CheckIdentityKeys) // migrations/0020_identity_keys.sql
}

// Upgrading a database to schema 22 works out the search text of the
// current intervals as the store opens: a search by text finds what
// states recorded before.
func TestMigrateSearchText(t *testing.T) {
	checkUpgrade(t, 22, undoSearchText, storetest.SeedSearchText, storetest.CheckSearchText) // migrations/0022_search_text.sql
}

// Upgrading a database to schema 23 makes duplicate_objects read the
// identity keys: it lists what states recorded before, as it did.
func TestMigrateDuplicatesByKey(t *testing.T) {
	checkUpgrade(t, 23, undoDuplicatesByKey, storetest.SeedIdentityKeys, storetest.CheckDuplicateView) // migrations/0023_duplicate_objects_by_key.sql
}

// Upgrading a database to schema 24 keeps what the text index held: a
// search finds what states recorded before, and the writes after it
// index a new object's text and drop a replaced or removed one's.
func TestMigrateTextQueue(t *testing.T) {
	checkUpgrade(t, 24, undoTextQueue, storetest.SeedSearchText, storetest.CheckTextIndexUpgrade) // migrations/0024_text_index_by_statement.sql
}

// checkUpgrade writes with before, takes the database back to the schema
// before version with undo, reopens it (which migrates it from version
// on) and checks it with after.
func checkUpgrade(t *testing.T, version int, undo []string, before, after func(testing.TB, kilolock.Store)) {
	path := filepath.Join(t.TempDir(), "kl.db")
	s := openAt(t, path)
	before(t, s)
	// The text index whole, as the schema before kept it.
	if err := s.d.flushText(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, q := range append(undo[:len(undo):len(undo)], fmt.Sprintf(`DELETE FROM kl_schema_version WHERE version >= %d`, version)) {
		if _, err := s.d.write.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	after(t, openAt(t, path))
}

// TestLazyLockSync: with WithLazyLockSync, locks' and unlocks'
// transactions run with synchronous=NORMAL and every other write's, a
// commit's too, with FULL on the same one connection, before and after;
// without it, locks' are FULL too. Locking, committing under the lock and
// unlocking so work, and what they wrote is in the file when it is
// opened again.
func TestLazyLockSync(t *testing.T) {
	ctx := t.Context()
	syncOf := func(t *testing.T, write func(context.Context, func(sqlstore.Tx) error) error) int64 {
		t.Helper()
		var mode int64
		// Not through the store's prepared statements: SQLite reads a
		// PRAGMA's value when it prepares it.
		if err := write(ctx, func(t sqlstore.Tx) error { return t.(*tx).tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode) }); err != nil {
			t.Fatal(err)
		}
		return mode
	}
	const normal, full = 1, 2
	path := filepath.Join(t.TempDir(), "kl.db")
	s, err := Open(ctx, path, WithLazyLockSync())
	if err != nil {
		t.Fatal(err)
	}
	if w, l, w2 := syncOf(t, s.d.Write), syncOf(t, s.d.WriteLock), syncOf(t, s.d.Write); w != full || l != normal || w2 != full {
		t.Fatalf("synchronous: %d for a write, %d for a lock, %d for the write after; want %d, %d, %d", w, l, w2, full, normal, full)
	}
	if _, err := s.Lock(ctx, "lazy", kilolock.LockInfo{ID: "l1", Operation: "OperationTypeApply"}, kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &kilolock.Commit{LockID: "l1", Version: kilolock.Version{Serial: 1, Lineage: "l", Source: kilolock.SourceApply, LockID: "l1"}}
	if _, _, err := s.Commit(ctx, "lazy", c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "lazy", kilolock.LockInfo{ID: "l2", Operation: "OperationTypeApply"}, kilolock.LockOptions{}); !errors.Is(err, kilolock.ErrLocked) {
		t.Fatalf("a second lock while l1 holds: %v, want ErrLocked", err)
	}
	if _, err := s.Unlock(ctx, "lazy", "l1", kilolock.UnlockOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "lazy", kilolock.LockInfo{ID: "l3", Operation: "OperationTypeApply"}, kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path)
	st, err := s.State(ctx, "lazy")
	if err != nil || st.Serial != 1 || len(st.Locks) != 1 || st.Locks[0].Info.ID != "l3" {
		t.Fatalf("reopened: %+v, %v; want serial 1, locked by l3", st, err)
	}
	if l := syncOf(t, s.d.WriteLock); l != full {
		t.Errorf("without WithLazyLockSync a lock's synchronous is %d, want %d", l, full)
	}
}

// BenchmarkLockCycle is a Terraform write cycle's transactions on a
// database file: LOCK, a commit of one version (no instances: the
// transactions' own cost, fsyncs included), UNLOCK; with WithLazyLockSync
// (lazy=true) and without; by one writer, and by 8 at once, each on a
// state of its own (a cycle is then b.N/8 of each one's, and the
// writers' locks and unlocks may share their transactions: lockbatch.go).
func BenchmarkLockCycle(b *testing.B) {
	for _, writers := range []int{1, 8} {
		for _, lazy := range []bool{false, true} {
			b.Run(fmt.Sprintf("writers=%d/lazy=%v", writers, lazy), func(b *testing.B) {
				ctx := b.Context()
				var opts []Option
				if lazy {
					opts = append(opts, WithLazyLockSync())
				}
				s, err := Open(ctx, filepath.Join(b.TempDir(), "kl.db"), opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						name := "cycle-" + strconv.Itoa(w)
						for i := w; i < b.N; i += writers {
							k := i / writers
							id := strconv.Itoa(i)
							if _, err := s.Lock(ctx, name, kilolock.LockInfo{ID: id, Operation: "OperationTypeApply"}, kilolock.LockOptions{}); err != nil {
								b.Error(err)
								return
							}
							c := &kilolock.Commit{Parent: int64(k), LockID: id, Version: kilolock.Version{Serial: uint64(k + 1), Lineage: "l", Source: kilolock.SourceApply, LockID: id}}
							if k > 0 {
								st, err := s.State(ctx, name)
								if err != nil {
									b.Error(err)
									return
								}
								c.Parent = st.Current
							}
							if _, _, err := s.Commit(ctx, name, c); err != nil {
								b.Error(err)
								return
							}
							if _, err := s.Unlock(ctx, name, id, kilolock.UnlockOptions{}); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			})
		}
	}
}

// TestTextIndexer: the text indexer moves what writes queue into the
// FTS5 index by itself, after they commit: a new object's text enters
// it, a replaced or removed object's leaves it, and the queue empties.
// (What a search finds meanwhile is storetest's: the queue is read too.)
func TestTextIndexer(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	storetest.SeedSearchText(t, s)
	waitTextQueue(t, s)
	indexed := func(text string) (n int) {
		t.Helper()
		if err := s.d.write.db.QueryRow(`SELECT count(*) FROM instance_text WHERE instance_text MATCH kl_trigrams(?)`, text).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, o := indexed("before-upgrade"), indexed("other"); n != 1 || o != 1 {
		t.Fatalf("after the first write the index holds %d objects with its first text and %d with its second, want 1 and 1", n, o)
	}
	storetest.CheckTextIndexUpgrade(t, s) // replaces one, removes the other
	waitTextQueue(t, s)
	for text, want := range map[string]int{"after-upgrade": 1, "before-upgrade": 0, "other": 0} {
		if n := indexed(text); n != want {
			t.Errorf("after the second write the index holds %d objects with %q, want %d", n, text, want)
		}
	}
	var rows int
	if err := s.d.write.db.QueryRow(`SELECT count(*) FROM instance_text_rows`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("instance_text_rows: %d rows (%v), want 1", rows, err)
	}
}

// waitTextQueue waits for s's text indexer to empty the queue: it does a
// second after a write (a minute is the bound for a loaded CI machine).
func waitTextQueue(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var queued bool
		if err := s.d.write.db.QueryRow(sqlTextQueued).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		if !queued {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the text index's queue is not empty after a minute")
		}
	}
}

// TestTextIndexPass: the first transaction of a pass that finds at most
// textPass rows queued moves them all, so that what steady writes queued
// becomes one FTS5 segment, not one per textBatch rows; one that finds
// more (a backlog) moves textBatch rows, and so does every later one of
// the pass, which bounds SQLite's memory while a first write's objects
// are indexed.
func TestTextIndexPass(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	s.d.text.stop() // the test moves the queue itself
	<-s.d.text.done
	ctx := t.Context()
	pending := func() (n int) {
		t.Helper()
		if err := s.d.write.db.QueryRow(`SELECT count(*) FROM instance_text_rows WHERE pending IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	write := func(name string, n int) {
		t.Helper()
		c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: "l", Format: "compact"}}
		for i := range n {
			c.Upserts = append(c.Upserts, randomTextInstance(t, i, 0))
		}
		if _, _, err := s.Commit(ctx, name, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		queued    int
		pass      bool
		wantMoved int
		wantMore  bool
		stateName string
	}{
		{3 * textBatch, true, 3 * textBatch, false, "steady"},
		{textPass + 1, true, textBatch, true, "backlog"},
		{0, false, textBatch, true, ""}, // the backlog's next batch
	} {
		if c.queued > 0 {
			write(c.stateName, c.queued)
		}
		before := pending()
		more, _, err := s.d.indexTextBatch(ctx, c.pass)
		if err != nil {
			t.Fatal(err)
		}
		if moved := before - pending(); moved != c.wantMoved || more != c.wantMore {
			t.Errorf("%d queued, pass %t: moved %d (more %t), want %d (more %t)", before, c.pass, moved, more, c.wantMoved, c.wantMore)
		}
	}
	if err := s.d.flushText(ctx); err != nil {
		t.Fatal(err)
	}
	var indexed int
	if err := s.d.write.db.QueryRow(`SELECT count(*) FROM instance_text_rows`).Scan(&indexed); err != nil || indexed != 3*textBatch+textPass+1 || pending() != 0 {
		t.Errorf("after the flush: %d rows (%v), %d pending, want %d indexed", indexed, err, pending(), 3*textBatch+textPass+1)
	}
}

// The text index rewrites a level of segments for its deleted rows at
// 30% of them (migrations/0025_text_index_deletemerge.sql), on a new
// database and on one upgraded from schema 24, whose index keeps
// answering.
func TestTextIndexDeleteMerge(t *testing.T) {
	deleteMerge := func(t testing.TB, s kilolock.Store) {
		t.Helper()
		var v int
		if err := s.(*Store).d.write.db.QueryRow(`SELECT v FROM instance_text_config WHERE k = 'deletemerge'`).Scan(&v); err != nil || v != 30 {
			t.Errorf("the text index's deletemerge: %d (%v), want 30", v, err)
		}
	}
	deleteMerge(t, openAt(t, filepath.Join(t.TempDir(), "kl.db")))
	checkUpgrade(t, 25, []string{`DELETE FROM instance_text_config WHERE k = 'deletemerge'`}, storetest.SeedSearchText, func(t testing.TB, s kilolock.Store) {
		deleteMerge(t, s)
		storetest.CheckTextIndexUpgrade(t, s)
	})
}

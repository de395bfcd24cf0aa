package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/storetest"
)

// bigState is n instances with about attrBytes of attributes each.
func bigState(tb testing.TB, n, attrBytes int) []kilolock.Instance {
	tb.Helper()
	out := make([]kilolock.Instance, n)
	for i := range out {
		out[i] = instance(tb, fmt.Sprintf("r%d", i/100), i%100, bigAttributes(i, attrBytes))
	}
	return out
}

// twoChanged returns a commit onto parent changing instances 2k and 2k+1
// of base (round decides their new content).
func twoChanged(tb testing.TB, base []kilolock.Instance, parent int64, round int) *kilolock.Commit {
	var ups []kilolock.Instance
	for _, i := range []int{(2 * round) % len(base), (2*round + 1) % len(base)} {
		ups = append(ups, instance(tb, fmt.Sprintf("r%d", i/100), i%100, bigAttributes(i, 1000)+fmt.Sprint(round)))
	}
	return commit(parent, ups...)
}

// TestWriteStatsMatchPostgres checks Commit's WriteStats.Rows against
// PostgreSQL's own count of inserted and updated tuples.
func TestWriteStatsMatchPostgres(t *testing.T) {
	// One connection, so the stats flush below covers every write.
	url := testpg.URL(t)
	s := openURL(t, withParam(url, "pool_max_conns", "1"))
	ctx := context.Background()
	tuples := func() int64 {
		t.Helper()
		if _, err := s.pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			t.Fatal(err)
		}
		var n int64
		// A new transaction reads the stats afresh.
		err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM pg_stat_user_tables`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	base := bigState(t, 1000, 1000)
	c := commit(0, base...)
	c.OutputUpserts = []kilolock.Output{output("a", "x", false), output("b", "x", false)} // one payload
	c.Raw = []byte("raw")
	before := tuples()
	v, ws := mustCommit(t, s, "stats", c)
	if got := tuples() - before; got != int64(ws.Rows) {
		t.Errorf("first write: WriteStats.Rows = %d, PostgreSQL counted %d", ws.Rows, got)
	}
	// states insert and update, version, raw, 1000 instance intervals, 1001
	// payloads (the two outputs share one), 2 output intervals.
	if want := 2 + 1 + 1 + 1000 + 1001 + 2; ws.Rows != want {
		t.Errorf("first write: %d rows, want %d", ws.Rows, want)
	}
	t.Logf("first write of 1,000 instances: %+v", ws)

	for round := range 3 {
		before := tuples()
		v, ws = mustCommit(t, s, "stats", twoChanged(t, base, v.Number, round))
		if got := tuples() - before; got != int64(ws.Rows) {
			t.Errorf("round %d: WriteStats.Rows = %d, PostgreSQL counted %d", round, ws.Rows, got)
		}
		if ws.Rows != 8 {
			t.Errorf("round %d: %d rows, want 8", round, ws.Rows)
		}
		// Each changed object's payload, and the search text of its
		// opened interval (the index of kl search --text), the same
		// attributes again.
		if ws.Bytes < 4000 || ws.Bytes > 6000 {
			t.Errorf("round %d: %d bytes, want about two 1 KB payloads and their two 1 KB search texts", round, ws.Bytes)
		}
	}
	// Setting an instance back to an earlier content reuses its payload.
	back := commit(v.Number, base[0])
	before = tuples()
	_, ws = mustCommit(t, s, "stats", back)
	if got := tuples() - before; got != int64(ws.Rows) || ws.Rows != 4 {
		t.Errorf("revert: WriteStats.Rows = %d, PostgreSQL counted %d, want 4", ws.Rows, got)
	}
	// A commit that changes nothing writes its version and the states row.
	_, ws = mustCommit(t, s, "stats", commit(v.Number+1, base[0]))
	if ws.Rows != 2 {
		t.Errorf("no-op commit: %d rows, want 2", ws.Rows)
	}
}

// BenchmarkCommit2of10000 is storetest.BenchCommit2of10000.
func BenchmarkCommit2of10000(b *testing.B) { storetest.BenchCommit2of10000(b, openStore(b)) }

// BenchmarkCommitText is storetest.BenchCommitText (the server's work is
// in its own processes: no CPU times).
func BenchmarkCommitText(b *testing.B) { storetest.BenchCommitText(b, openStore(b), nil, nil) }

// BenchmarkChangesSince is storetest.BenchChangesSince. The store's work
// is done by the server, so beside wall time it reports the shared buffers
// the server touched per operation (pg_stat_database), which neither a busy
// machine nor caching changes: one connection, so that forcing its
// statistics out covers every read.
func BenchmarkChangesSince(b *testing.B) {
	s := openURL(b, withParam(testpg.URL(b), "pool_max_conns", "1"))
	ctx := context.Background()
	storetest.BenchChangesSince(b, s, "blocks/op", func() float64 {
		b.Helper()
		if _, err := s.pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
			b.Fatal(err)
		}
		var n int64
		err := s.pool.QueryRow(ctx, `SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
		if err != nil {
			b.Fatal(err)
		}
		return float64(n)
	})
}

// withParam adds a parameter to a URL or keyword/value connection string.
func withParam(url, key, value string) string {
	switch {
	case !strings.Contains(url, "://"):
		return url + " " + key + "=" + value
	case strings.Contains(url, "?"):
		return url + "&" + key + "=" + value
	}
	return url + "?" + key + "=" + value
}

// BenchmarkBackupRestore is storetest.BenchBackupRestore: 10,000
// instances, 1,000 versions.
func BenchmarkBackupRestore(b *testing.B) {
	storetest.BenchBackupRestore(b, func(tb testing.TB) kilolock.Store { return openStore(tb) })
}

// BenchmarkPrune is storetest.BenchPrune: the cost of one pruned version.
func BenchmarkPrune(b *testing.B) { storetest.BenchPrune(b, openStore(b)) }

package sqlite

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/storetest"
)

// TestQueryHugeValue checks that a value SQLite would build past the
// answer's byte cap is refused inside the engine, before it is built:
// neither the Go heap nor the process grows by anything like it.
func TestQueryHugeValue(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	for _, q := range []string{
		`SELECT zeroblob(100000000)`,
		`SELECT randomblob(100000000)`,
		`SELECT hex(zeroblob(50000000))`,
		`SELECT printf('%.*c', 100000000, 'x')`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) SELECT group_concat(hex(zeroblob(50000)), '') FROM n`,
	} {
		t.Run(q, func(t *testing.T) {
			var err error
			heap := storetest.HeapAllocated(func() {
				rss, ok := storetest.PeakRSSGrowth(func() { _, err = s.Query(t.Context(), kilolock.QueryLimits{}, q) })
				if ok && rss > 64<<20 {
					t.Errorf("the peak resident set grew by %d MiB, want at most 64", rss>>20)
				}
			})
			var ie *kilolock.InvalidError
			if !errors.As(err, &ie) || ie.Code != "query_too_large" {
				t.Fatalf("error %v, want code query_too_large", err)
			}
			if heap > 32<<20 {
				t.Errorf("the refused query allocated %d MiB of Go heap, want at most 32", heap>>20)
			}
		})
	}
	if res, err := s.Query(t.Context(), kilolock.QueryLimits{MaxBytes: 200 << 20}, `SELECT length(zeroblob(100000000))`); err != nil || res.Rows[0][0] != int64(100000000) {
		t.Errorf("with a cap above it: %v %v", res, err)
	}
}

// TestQueryFunctions checks the functions a query may not call.
func TestQueryFunctions(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	if _, err := s.Query(t.Context(), kilolock.QueryLimits{}, `SELECT load_extension('/tmp/x')`); !errors.Is(err, kilolock.ErrReadOnly) {
		t.Errorf("load_extension: %v, want ErrReadOnly", err)
	}
	if _, err := s.Query(t.Context(), kilolock.QueryLimits{}, `SELECT value FROM json_each('[1,2]')`); err != nil {
		t.Errorf("json_each of an argument: %v", err)
	}
}

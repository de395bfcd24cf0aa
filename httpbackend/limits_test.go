package httpbackend

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlite"
)

// limitedEnv serves a fresh SQLite store through an engine with o's limits.
func limitedEnv(t *testing.T, o kilolock.Options) *testEnv {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kilolock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	engine := kilolock.NewEngine(st, o)
	return &testEnv{t: t, h: New(engine, Options{}), engine: engine, store: st, logs: &syncBuffer{}}
}

// TestTooManyHolders checks the 423 past an optimistic state's cap on
// holders: the CLI reads the first holder's LockInfo from it (and retries
// with -lock-timeout), other clients the code and a hint naming the cap.
func TestTooManyHolders(t *testing.T) {
	env := limitedEnv(t, kilolock.Options{DefaultLockMode: kilolock.LockOptimistic, MaxLockHolders: 2})
	env.lock("herd", lockInfo("a", "alice"))
	env.lock("herd", lockInfo("b", "bob"))
	w := env.do("LOCK", "/v1/states/herd", mustJSON(t, lockInfo("c", "carol")))
	if w.Code != http.StatusLocked {
		t.Fatalf("third LOCK: %d %s", w.Code, w.Body)
	}
	var body struct {
		kilolock.LockInfo
		Error, Message, Hint string
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != "a" || body.Error != "too_many_holders" || !strings.Contains(body.Message, "2 holders") || !strings.Contains(body.Hint, "--max-lock-holders") {
		t.Errorf("423 body %s: want alice's LockInfo, code too_many_holders, the cap and the flag", w.Body)
	}
	if w := env.do("UNLOCK", "/v1/states/herd", mustJSON(t, lockInfo("b", "bob"))); w.Code != http.StatusOK {
		t.Fatalf("UNLOCK: %d %s", w.Code, w.Body)
	}
	env.lock("herd", lockInfo("c", "carol"))
}

// TestQueryRefusals checks the answers of the query API to what users'
// SQL may not do.
func TestQueryRefusals(t *testing.T) {
	env := limitedEnv(t, kilolock.Options{QueryLimits: kilolock.QueryLimits{Timeout: 200 * time.Millisecond, MaxBytes: 4096}})
	for _, tc := range []struct {
		sql    string
		status int
		code   string
	}{
		{`SELECT * FROM tokens`, http.StatusForbidden, "query_denied"},
		{`DELETE FROM locks`, http.StatusForbidden, "read_only"},
		{`SELECT zeroblob(100000)`, http.StatusBadRequest, "query_too_large"},
		{`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT i, printf('%.100c', 'x') FROM n`, http.StatusBadRequest, "query_too_large"},
		{`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`, http.StatusBadRequest, "query_timeout"},
	} {
		w := env.do("POST", "/v1/api/query", mustJSON(t, map[string]string{"sql": tc.sql}))
		var body errorBody
		json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != tc.status || body.Error != tc.code || body.Hint == "" {
			t.Errorf("%s: %d %s, want %d %s with a hint", tc.sql, w.Code, w.Body, tc.status, tc.code)
		}
	}
}

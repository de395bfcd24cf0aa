package httpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy"
)

// endlessQuery runs until it is cancelled (or, much later, overflows).
const endlessQuery = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`

// TestQueryConcurrency: one credential runs at most two queries at once
// (DefaultQueryConcurrency); its next one is answered 429 with
// Retry-After and a hint at once, while every other credential's queries
// still run; once its queries end, it may query again.
func TestQueryConcurrency(t *testing.T) { eachAuthEnv(t, testQueryConcurrency) }

func testQueryConcurrency(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, _ := seedCrossTenant(t, env, ts)
	hog := bearer(tenants[0].autoRead[0])
	query := func(ctx context.Context, sql string, header []string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(ctx, "POST", "/v1/api/query", bytes.NewReader(mustJSON(t, map[string]string{"sql": sql})))
		r.Header.Set(header[0], header[1])
		w := httptest.NewRecorder()
		env.h.ServeHTTP(w, r)
		return w
	}

	// Four endless queries of one token, as the probe ran them: two run,
	// two are refused at once.
	ctx, cancel := context.WithCancel(t.Context())
	answers := make(chan *httptest.ResponseRecorder, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { answers <- query(ctx, endlessQuery, hog) })
	}
	defer func() { cancel(); wg.Wait() }()
	for range 2 {
		select {
		case w := <-answers:
			if w.Code != http.StatusTooManyRequests {
				t.Fatalf("an endless query past the limit = %d %s, want 429", w.Code, w.Body)
			}
			var body struct{ Error, Message, Hint string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error != "too_many_queries" || body.Hint == "" ||
				!strings.Contains(body.Hint, "--query-concurrency") {
				t.Errorf("429 body = %s (%v)", w.Body, err)
			}
			if ra := w.Header().Get("Retry-After"); ra != "5" {
				t.Errorf("429 Retry-After = %q", ra)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("four endless queries of one token all run: none was refused")
		}
	}
	// The same token, with anything: refused while its two run.
	if w := query(t.Context(), `SELECT 1`, hog); w.Code != http.StatusTooManyRequests {
		t.Errorf("a third query of the token = %d %s, want 429", w.Code, w.Body)
	}
	// Everyone else: the same tenant's other token and PAT, another
	// tenant, the operator.
	for _, other := range [][]string{bearer(tenants[0].auto[0]), bearer(tenants[0].pat), bearer(tenants[1].autoRead[1]), bearer(operatorSecret)} {
		start := time.Now()
		if w := query(t.Context(), `SELECT count(*) FROM resources`, other); w.Code != http.StatusOK {
			t.Errorf("another credential's count(*) beside the endless queries = %d %s", w.Code, w.Body)
		}
		t.Logf("another credential's count(*) took %s", time.Since(start))
	}
	cancel()
	wg.Wait()
	close(answers)
	for w := range answers {
		if w.Code == http.StatusOK || w.Code == http.StatusTooManyRequests {
			t.Errorf("a cancelled endless query = %d %s", w.Code, w.Body)
		}
	}
	if w := query(t.Context(), `SELECT 1`, hog); w.Code != http.StatusOK {
		t.Errorf("the token's query once its others ended = %d %s", w.Code, w.Body)
	}
}

// TestQueryConcurrencyOption: Options.QueryConcurrency sets the limit (on
// a server without authentication, per remote host); a negative one sets
// none.
func TestQueryConcurrencyOption(t *testing.T) {
	for _, c := range []struct {
		limit, want int
	}{{0, DefaultQueryConcurrency}, {1, 1}, {3, 3}, {-1, -1}} {
		env := newEnv(t, "", Options{QueryConcurrency: c.limit})
		if env.h.queries.limit != c.want {
			t.Errorf("QueryConcurrency %d: limit %d, want %d", c.limit, env.h.queries.limit, c.want)
		}
	}
	env := newEnv(t, "", Options{QueryConcurrency: 1})
	r := httptest.NewRequest("POST", "/v1/api/query", nil)
	r.RemoteAddr = "192.0.2.7:4711"
	done, err := env.h.queries.enter(r)
	if err != nil {
		t.Fatal(err)
	}
	mine := httptest.NewRequest("POST", "/v1/api/query", strings.NewReader(`{"sql": "SELECT 1"}`))
	mine.RemoteAddr = "192.0.2.7:4712" // the same host, another connection
	w := httptest.NewRecorder()
	env.h.ServeHTTP(w, mine)
	if w.Code != http.StatusTooManyRequests {
		t.Errorf("a second query from one host with a limit of 1 = %d %s", w.Code, w.Body)
	}
	other := httptest.NewRequest("POST", "/v1/api/query", strings.NewReader(`{"sql": "SELECT 1"}`))
	other.RemoteAddr = "192.0.2.8:4711"
	w = httptest.NewRecorder()
	env.h.ServeHTTP(w, other)
	if w.Code != http.StatusOK {
		t.Errorf("another host's query = %d %s", w.Code, w.Body)
	}
	done()
	if n := len(env.h.queries.running); n != 0 {
		t.Errorf("%d credentials counted once every query ended", n)
	}
}

package httpbackend

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend/prommetrics"
	"github.com/kilolock/kilolock/store/sqlite"
)

// TestMetricsStateCache: /metrics shows what the engine's cache of
// current versions did and holds. With room for one state, a POST of b
// lets go of a's document and then of a; a GET of a loads it back (a
// miss) and lets go of b; a second GET of a finds it (a hit).
func TestMetricsStateCache(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "kilolock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	engine := kilolock.NewEngine(st, kilolock.Options{CacheBytes: 1})
	h := New(engine, Options{Metrics: prommetrics.New(nil)})
	do := func(method, target string, body []byte) string {
		t.Helper()
		r := httptest.NewRequest(method, target, strings.NewReader(string(body)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
		}
		return w.Body.String()
	}
	doc := stateDoc(t, "lin", 1, map[string]string{"web": "v1"})
	do("POST", "/v1/states/a", doc)
	do("POST", "/v1/states/b", doc)
	for range 2 {
		if got := do("GET", "/v1/states/a", nil); got != string(doc) {
			t.Fatalf("GET a: %q, want the bytes posted", got)
		}
	}
	s := engine.CacheStats()
	body := do("GET", "/metrics", nil)
	for _, want := range []string{
		"# TYPE kl_state_cache_hits_total counter\nkl_state_cache_hits_total 1\n",
		"# TYPE kl_state_cache_misses_total counter\nkl_state_cache_misses_total 1\n",
		"# TYPE kl_state_cache_evictions_total counter\nkl_state_cache_evictions_total 2\n",
		"# TYPE kl_state_cache_document_evictions_total counter\nkl_state_cache_document_evictions_total 2\n",
		fmt.Sprintf("# TYPE kl_state_cache_bytes gauge\nkl_state_cache_bytes %d\n", s.Bytes),
		"# TYPE kl_state_cache_limit_bytes gauge\nkl_state_cache_limit_bytes 1\n",
		`kl_state_cache_states{document="kept"} 1` + "\n",
		`kl_state_cache_states{document="let_go"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if s.Bytes <= int64(len(doc)) || s.States != 1 {
		t.Errorf("the cache holds %d bytes of %d states, want a's document and index", s.Bytes, s.States)
	}
}

package httpbackend

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
)

// TestProtocolHappyPath walks what `tofu apply` does on a new state: lock,
// read (404: empty), write, read back the same bytes, unlock.
func TestProtocolHappyPath(t *testing.T) {
	env := newEnv(t, "", Options{})
	a := lockInfo("11111111-aaaa", "alice@laptop")

	env.lock("prod", a)

	w := env.do("GET", "/v1/states/prod", nil)
	if w.Code != http.StatusNotFound {
		t.Fatalf("GET before any write: %d, want 404 (an empty state to the clients)", w.Code)
	}
	if e := errorOf(t, w); e.Error != "state_not_found" {
		t.Errorf("GET before any write: error %q, want state_not_found", e.Error)
	}

	doc := stateDoc(t, "lineage-1", 1, map[string]string{"web": "a", "db": "b"})
	w = env.do("POST", "/v1/states/prod?ID="+a.ID, doc, "Content-MD5", md5Of(doc), "Content-Type", "application/json")
	if w.Code != http.StatusOK {
		t.Fatalf("POST under the lock: %d %s", w.Code, w.Body)
	}
	var ans writeAnswer
	json.Unmarshal(w.Body.Bytes(), &ans)
	if ans.Version != 1 || ans.Serial != 1 || ans.Added != 2 {
		t.Errorf("POST answer = %+v, want version 1, serial 1, 2 added", ans)
	}

	w = env.do("GET", "/v1/states/prod", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET after the write: %d %s", w.Code, w.Body)
	}
	if !bytes.Equal(w.Body.Bytes(), doc) {
		t.Errorf("GET does not give back the posted bytes:\n%s", cmp.Diff(string(doc), w.Body.String()))
	}
	if got := w.Header().Get("X-Kilolock-Version"); got != "1" {
		t.Errorf("X-Kilolock-Version = %q, want 1", got)
	}
	if got := w.Header().Get("X-Kilolock-Serial"); got != "1" {
		t.Errorf("X-Kilolock-Serial = %q, want 1", got)
	}
	etag := w.Header().Get("ETag")
	if !strings.HasPrefix(etag, `"v1-s1-`) {
		t.Errorf("ETag = %q, want it to name version 1 and serial 1", etag)
	}
	if w := env.do("GET", "/v1/states/prod", nil, "If-None-Match", etag); w.Code != http.StatusNotModified {
		t.Errorf("GET with If-None-Match of the current ETag: %d, want 304", w.Code)
	}

	if w := env.do("UNLOCK", "/v1/states/prod", mustJSON(t, a)); w.Code != http.StatusOK {
		t.Fatalf("UNLOCK with the holder's LockInfo: %d %s", w.Code, w.Body)
	}
	if strings.Contains(env.logs.String(), "forced unlock") {
		t.Errorf("a normal unlock was logged as forced:\n%s", env.logs)
	}
	// Unlocked: someone else may lock now, and an UNLOCK retried after a
	// lost answer still gets 200.
	if w := env.do("UNLOCK", "/v1/states/prod", mustJSON(t, a)); w.Code != http.StatusOK {
		t.Errorf("UNLOCK of a lock no longer held: %d, want 200 (idempotent)", w.Code)
	}
	env.lock("prod", lockInfo("22222222-bbbb", "bob@ci"))
}

// TestGetServesGzip: a client that accepts gzip gets it from the first GET
// after a write on, streamed as it is compressed (no Content-Length yet),
// then from the compressed copy (with its length); every answer
// decompresses to the posted bytes, and a client that does not accept gzip
// gets them plain.
func TestGetServesGzip(t *testing.T) {
	env := newEnv(t, "", Options{})
	doc := stateDoc(t, "lineage-1", 1, map[string]string{"web": strings.Repeat("x", 4096)})
	env.post("s", "", doc)

	gunzip := func(t *testing.T, w *httptest.ResponseRecorder) []byte {
		t.Helper()
		if w.Code != http.StatusOK || w.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("GET accepting gzip: %d, Content-Encoding %q", w.Code, w.Header().Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return plain
	}
	// At once, as several clients reading one new version do.
	answers := make([]*httptest.ResponseRecorder, 4)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = env.do("GET", "/v1/states/s", nil, "Accept-Encoding", "gzip") })
	}
	wg.Wait()
	for i, w := range answers {
		if got := gunzip(t, w); !bytes.Equal(got, doc) {
			t.Errorf("GET %d: gzip body does not decompress to the posted bytes", i)
		}
	}
	w := env.do("GET", "/v1/states/s", nil, "Accept-Encoding", "deflate, gzip;q=0.8")
	if n := w.Header().Get("Content-Length"); n != strconv.Itoa(w.Body.Len()) {
		t.Errorf("GET of the compressed copy: Content-Length %q, body %d bytes", n, w.Body.Len())
	}
	if got := gunzip(t, w); !bytes.Equal(got, doc) {
		t.Errorf("gzip body does not decompress to the posted bytes")
	}
	if w := env.do("GET", "/v1/states/s", nil); w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), doc) || w.Header().Get("Content-Length") != strconv.Itoa(len(doc)) {
		t.Errorf("GET without Accept-Encoding: Content-Encoding %q, Content-Length %q, %d bytes", w.Header().Get("Content-Encoding"), w.Header().Get("Content-Length"), w.Body.Len())
	}
	if w := env.do("GET", "/v1/states/s", nil, "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
		t.Errorf("GET with gzip;q=0 got gzip")
	}
	if w := env.do("HEAD", "/v1/states/s", nil); w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(doc)) {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
}

// TestLockHeld checks the 423 answer is the holder's LockInfo, which
// Terraform decodes to print who holds the lock, with the error, message
// and hint every error body carries beside it (json decoding ignores them;
// none matches a LockInfo field, even case-insensitively).
func TestLockHeld(t *testing.T) {
	env := newEnv(t, "", Options{})
	a := lockInfo("11111111-aaaa", "alice@laptop")
	env.lock("prod", a)

	w := env.do("LOCK", "/v1/states/prod", mustJSON(t, lockInfo("22222222-bbbb", "bob@ci")))
	if w.Code != http.StatusLocked {
		t.Fatalf("LOCK of a held state: %d, want 423", w.Code)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &fields); err != nil {
		t.Fatalf("423 body is not JSON: %s", w.Body)
	}
	wantFields := []string{"Created", "ID", "Info", "Operation", "Path", "Version", "Who", "error", "hint", "message", "request_id"}
	var got []string
	for k := range fields {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, wantFields) {
		t.Errorf("423 body has fields %v, want a LockInfo's and the error fields %v", got, wantFields)
	}
	var holder kilolock.LockInfo
	json.Unmarshal(w.Body.Bytes(), &holder)
	if holder.ID != a.ID || holder.Who != a.Who || holder.Operation != a.Operation {
		t.Errorf("423 body = %+v, want the holder %+v", holder, a)
	}

	// The same lock id again (a retried LOCK whose answer was lost) is 200.
	if w := env.do("LOCK", "/v1/states/prod", mustJSON(t, a)); w.Code != http.StatusOK {
		t.Errorf("LOCK again by the holder: %d, want 200", w.Code)
	}
	// The POST lock route answers the same.
	if w := env.do("POST", "/v1/states/prod/lock", mustJSON(t, lockInfo("33", "carol"))); w.Code != http.StatusLocked {
		t.Errorf("POST /lock of a held state: %d, want 423", w.Code)
	}
	metrics := env.do("GET", "/metrics", nil).Body.String()
	if !strings.Contains(metrics, "kl_locks_refused_total 2") {
		t.Errorf("metrics do not count 2 refused locks:\n%s", metrics)
	}
	// bob waits and gets it after alice unlocks: a lock wait.
	env.do("UNLOCK", "/v1/states/prod", mustJSON(t, a))
	env.lock("prod", lockInfo("22222222-bbbb", "bob@ci"))
	if metrics := env.do("GET", "/metrics", nil).Body.String(); !strings.Contains(metrics, "kl_lock_waits_total 1") {
		t.Errorf("metrics do not count the lock wait:\n%s", metrics)
	}
}

// TestPostLockRules: a POST with the wrong lock id is 409 naming the
// holder; with no id on a held state it is 423 with the holder's LockInfo.
func TestPostLockRules(t *testing.T) {
	env := newEnv(t, "", Options{})
	a := lockInfo("11111111-aaaa", "alice@laptop")
	env.lock("prod", a)
	doc := stateDoc(t, "lineage-1", 1, map[string]string{"web": "a"})

	w := env.do("POST", "/v1/states/prod?ID=not-the-holder", doc)
	if w.Code != http.StatusConflict {
		t.Fatalf("POST with a wrong lock id: %d, want 409", w.Code)
	}
	e := errorOf(t, w)
	if e.Error != "lock_mismatch" || e.Holder == nil || e.Holder.ID != a.ID {
		t.Errorf("409 body = %s, want lock_mismatch naming the holder", w.Body)
	}

	w = env.do("POST", "/v1/states/prod", doc)
	if w.Code != http.StatusLocked {
		t.Fatalf("POST without a lock id on a held state: %d, want 423", w.Code)
	}
	var holder kilolock.LockInfo
	if err := json.Unmarshal(w.Body.Bytes(), &holder); err != nil || holder.ID != a.ID {
		t.Errorf("423 body = %s, want the holder's LockInfo", w.Body)
	}

	// Unlocked, a POST with no lock id is a push.
	env.do("UNLOCK", "/v1/states/prod", mustJSON(t, a))
	env.post("prod", "", doc)
	h, err := env.engine.History(t.Context(), "prod", kilolock.HistoryOptions{})
	if err != nil || len(h) != 1 || h[0].Source != kilolock.SourcePush {
		t.Errorf("history after a push = %+v, %v; want one version from a push", h, err)
	}
}

// TestForceUnlock covers the three UNLOCK bodies: terraform's empty one,
// tofu's LockInfo with only an ID, and an UNLOCK by someone who does not
// hold the lock.
func TestForceUnlock(t *testing.T) {
	a := lockInfo("11111111-aaaa", "alice@laptop")

	t.Run("empty body", func(t *testing.T) {
		env := newEnv(t, "", Options{})
		env.lock("prod", a)
		if w := env.do("UNLOCK", "/v1/states/prod", nil); w.Code != http.StatusOK {
			t.Fatalf("UNLOCK with an empty body: %d %s", w.Code, w.Body)
		}
		env.lock("prod", lockInfo("22222222-bbbb", "bob")) // released
		if logs := env.logs.String(); !strings.Contains(logs, "forced unlock") || !strings.Contains(logs, "alice@laptop") {
			t.Errorf("the forced unlock was not logged with its holder:\n%s", logs)
		}
	})

	t.Run("tofu force-unlock ID", func(t *testing.T) {
		env := newEnv(t, "", Options{})
		env.lock("prod", a)
		w := env.do("UNLOCK", "/v1/states/prod", mustJSON(t, kilolock.LockInfo{ID: "wrong-id"}))
		if w.Code != http.StatusConflict {
			t.Fatalf("force-unlock of another id: %d, want 409", w.Code)
		}
		if e := errorOf(t, w); e.Holder == nil || e.Holder.ID != a.ID {
			t.Errorf("409 body = %s, want the holder", w.Body)
		}
		w = env.do("UNLOCK", "/v1/states/prod", mustJSON(t, kilolock.LockInfo{ID: a.ID}))
		if w.Code != http.StatusOK {
			t.Fatalf("force-unlock of the holder's id: %d %s", w.Code, w.Body)
		}
		var ans unlockAnswer
		json.Unmarshal(w.Body.Bytes(), &ans)
		if !ans.Forced || len(ans.Released) != 1 || ans.Released[0].Info.ID != a.ID {
			t.Errorf("force-unlock answer = %s, want alice's lock released, forced", w.Body)
		}
		if !strings.Contains(env.logs.String(), "forced unlock") {
			t.Errorf("tofu's force-unlock was not logged as forced:\n%s", env.logs)
		}
	})

	t.Run("someone else's lock", func(t *testing.T) {
		env := newEnv(t, "", Options{})
		env.lock("prod", a)
		w := env.do("UNLOCK", "/v1/states/prod", mustJSON(t, lockInfo("22222222-bbbb", "bob")))
		if w.Code != http.StatusConflict {
			t.Fatalf("UNLOCK by a non-holder: %d, want 409", w.Code)
		}
		if w := env.do("LOCK", "/v1/states/prod", mustJSON(t, lockInfo("33", "carol"))); w.Code != http.StatusLocked {
			t.Errorf("the lock was released by a non-holder")
		}
	})

	t.Run("POST unlock route", func(t *testing.T) {
		env := newEnv(t, "", Options{})
		env.lock("prod", a)
		if w := env.do("POST", "/v1/states/prod/unlock", mustJSON(t, a)); w.Code != http.StatusOK {
			t.Fatalf("POST /unlock: %d %s", w.Code, w.Body)
		}
		env.lock("prod", a)
		if w := env.do("DELETE", "/v1/states/prod/lock", mustJSON(t, a)); w.Code != http.StatusOK {
			t.Fatalf("DELETE /lock: %d %s", w.Code, w.Body)
		}
	})
}

// TestStateUnlockRoute: POST /v1/state-unlock/{name}, for proxies that
// drop an UNLOCK body, force-releases, or only the given ?ID=.
func TestStateUnlockRoute(t *testing.T) {
	env := newEnv(t, "", Options{})
	a := lockInfo("11111111-aaaa", "alice@laptop")
	env.lock("prod", a)

	if w := env.do("POST", "/v1/state-unlock/prod?ID=wrong", nil); w.Code != http.StatusConflict {
		t.Errorf("state-unlock with a wrong ID: %d, want 409", w.Code)
	}
	w := env.do("POST", "/v1/state-unlock/prod", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("state-unlock: %d %s", w.Code, w.Body)
	}
	var ans unlockAnswer
	json.Unmarshal(w.Body.Bytes(), &ans)
	if len(ans.Released) != 1 || ans.Released[0].Info.Who != a.Who {
		t.Errorf("state-unlock answer = %s, want alice's lock released", w.Body)
	}
	env.lock("prod", a)
	if w := env.do("POST", "/v1/state-unlock/prod?ID="+a.ID, nil); w.Code != http.StatusOK {
		t.Errorf("state-unlock with the holder's ID: %d", w.Code)
	}
	if w := env.do("POST", "/v1/state-unlock/never-seen", nil); w.Code != http.StatusOK {
		t.Errorf("state-unlock of an unknown state: %d, want 200 (nothing held)", w.Code)
	}
}

func TestContentMD5(t *testing.T) {
	env := newEnv(t, "", Options{})
	doc := stateDoc(t, "lineage-1", 1, map[string]string{"web": "a"})
	if w := env.do("POST", "/v1/states/s", doc, "Content-MD5", md5Of(doc)); w.Code != http.StatusOK {
		t.Errorf("POST with the right Content-MD5: %d %s", w.Code, w.Body)
	}
	doc2 := stateDoc(t, "lineage-1", 2, map[string]string{"web": "b"})
	w := env.do("POST", "/v1/states/s", doc2, "Content-MD5", md5Of(doc))
	if w.Code != http.StatusBadRequest || errorOf(t, w).Error != "checksum_mismatch" {
		t.Errorf("POST with a wrong Content-MD5: %d %s, want 400 checksum_mismatch", w.Code, w.Body)
	}
	if w := env.do("POST", "/v1/states/s", doc2); w.Code != http.StatusOK {
		t.Errorf("POST without Content-MD5: %d %s", w.Code, w.Body)
	}
}

func TestDelete(t *testing.T) {
	env := newEnv(t, "", Options{})
	if w := env.do("DELETE", "/v1/states/nope", nil); w.Code != http.StatusNotFound {
		t.Errorf("DELETE of an unknown state: %d, want 404", w.Code)
	}
	a := lockInfo("11111111-aaaa", "alice")
	env.lock("s", a)
	env.post("s", a.ID, stateDoc(t, "l", 1, map[string]string{"x": "1"}))
	if w := env.do("DELETE", "/v1/states/s", nil); w.Code != http.StatusLocked {
		t.Errorf("DELETE of a locked state by a non-holder: %d, want 423", w.Code)
	}
	if w := env.do("DELETE", "/v1/states/s?ID="+a.ID, nil); w.Code != http.StatusOK {
		t.Fatalf("DELETE by the holder: %d %s", w.Code, w.Body)
	}
	if w := env.do("GET", "/v1/states/s", nil); w.Code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d, want 404", w.Code)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	env := newEnv(t, "", Options{})
	w := env.do("PATCH", "/v1/states/prod", nil)
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("PATCH: %d, want 405", w.Code)
	}
	allow := w.Header().Get("Allow")
	for _, m := range []string{"GET", "POST", "LOCK", "UNLOCK", "DELETE"} {
		if !strings.Contains(allow, m) {
			t.Errorf("Allow = %q, lacks %s", allow, m)
		}
	}
	if e := errorOf(t, w); e.Error != "method_not_allowed" {
		t.Errorf("405 error = %q", e.Error)
	}
	if w := env.do("GET", "/v1/api/query", nil); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET /v1/api/query: %d Allow %q, want 405 Allow POST", w.Code, w.Header().Get("Allow"))
	}
	if w := env.do("GET", "/nowhere", nil); w.Code != http.StatusNotFound || errorOf(t, w).Hint == "" {
		t.Errorf("GET /nowhere: %d, want 404 with a hint", w.Code)
	}
}

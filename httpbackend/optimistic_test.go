package httpbackend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
)

// optimistic makes a state optimistic through the config API.
func (e *testEnv) optimistic(name string) {
	e.t.Helper()
	if w := e.do("POST", "/v1/api/states/"+name+"/config", []byte(`{"exclusive_locks": false}`)); w.Code != http.StatusOK {
		e.t.Fatalf("config exclusive_locks=false: %d %s", w.Code, w.Body)
	}
}

// holders returns the lock ids GET /v1/api/states/{name} lists, and their
// base serials.
func (e *testEnv) holders(name string) ([]string, []uint64) {
	e.t.Helper()
	w := e.do("GET", "/v1/api/states/"+name, nil)
	if w.Code != http.StatusOK {
		e.t.Fatalf("status: %d %s", w.Code, w.Body)
	}
	var s kilolock.Status
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		e.t.Fatal(err)
	}
	var ids []string
	var bases []uint64
	for _, l := range s.Locks {
		ids = append(ids, l.Info.ID)
		bases = append(bases, l.BaseSerial)
	}
	return ids, bases
}

// TestConfigLockMode: the lock mode is set through the config API, on a
// state that does not exist yet too, and not while anyone holds a lock.
func TestConfigLockMode(t *testing.T) {
	env := newEnv(t, "", Options{})
	w := env.do("POST", "/v1/api/states/fresh/config", []byte(`{"exclusive_locks": false}`))
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"ok":true,"state":"fresh","lock_mode":"optimistic","exclusive_locks":false,"allow_lineage_change":false,"shared_plan_locks":true,"require_client_encryption":false}` {
		t.Fatalf("config of a new state: %d %s", w.Code, w.Body)
	}
	a, b := lockInfo("aaaa-1", "alice"), lockInfo("bbbb-2", "bob")
	env.lock("fresh", a)
	env.lock("fresh", b)

	w = env.do("POST", "/v1/api/states/fresh/config", []byte(`{"exclusive_locks": true, "allow_lineage_change": true}`))
	if w.Code != http.StatusConflict {
		t.Fatalf("config while locked: %d %s, want 409", w.Code, w.Body)
	}
	e := errorOf(t, w)
	var ids []string
	for _, h := range e.Holders {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	if e.Error != kilolock.ReasonLocksHeld || !slices.Equal(ids, []string{a.ID, b.ID}) || !strings.Contains(e.Message, "alice") {
		t.Errorf("409 body = %s, want locks_held naming alice's and bob's locks", w.Body)
	}
	if logs := env.logs.String(); !strings.Contains(logs, "error=locks_held") || !strings.Contains(logs, "holders=") {
		t.Errorf("the request log does not name the holders:\n%s", logs)
	}
	// Nothing changed, lineage setting included.
	st, err := env.store.State(t.Context(), "fresh")
	if err != nil || st.LockMode != kilolock.LockOptimistic || st.AllowLineageChange {
		t.Fatalf("after a refused config: %+v, %v", st, err)
	}

	env.do("UNLOCK", "/v1/states/fresh", nil) // releases both
	w = env.do("POST", "/v1/api/states/fresh/config", []byte(`{"exclusive_locks": true}`))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"lock_mode":"exclusive"`) {
		t.Fatalf("config once unlocked: %d %s", w.Code, w.Body)
	}
	env.lock("fresh", a)
	if w := env.do("LOCK", "/v1/states/fresh", mustJSON(t, b)); w.Code != http.StatusLocked {
		t.Errorf("a second holder of an exclusive state: %d, want 423", w.Code)
	}

	for _, body := range []string{`{}`, `{"exclusive_locks": "no"}`, `{"exclusive_lock": false}`} {
		if w := env.do("POST", "/v1/api/states/fresh/config", []byte(body)); w.Code != http.StatusBadRequest {
			t.Errorf("config %s: %d, want 400", body, w.Code)
		}
	}
}

// TestOptimisticLockUnlock: in optimistic mode every new lock id is
// admitted; a normal UNLOCK releases only its own lock (and, retried,
// still answers 200), tofu's ID-only force-unlock releases only the named
// holder, and an empty body releases every holder, each logged.
func TestOptimisticLockUnlock(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.optimistic("shared")
	env.post("shared", "", stateDoc(t, "lineage-1", 1, map[string]string{"a": "1", "b": "1"}))
	locks := []kilolock.LockInfo{lockInfo("id-1", "alice"), lockInfo("id-2", "bob"), lockInfo("id-3", "carol"), lockInfo("id-4", "dave")}
	for _, l := range locks {
		env.lock("shared", l)
	}
	env.lock("shared", locks[0]) // the same id again: 200, still one lock
	ids, bases := env.holders("shared")
	if !slices.Equal(ids, []string{"id-1", "id-2", "id-3", "id-4"}) || !slices.Equal(bases, []uint64{1, 1, 1, 1}) {
		t.Fatalf("holders %v with base serials %v, want the 4 locks at serial 1", ids, bases)
	}

	released := func(w *httptest.ResponseRecorder) []string {
		t.Helper()
		if w.Code != http.StatusOK {
			t.Fatalf("unlock: %d %s", w.Code, w.Body)
		}
		var ans unlockAnswer
		json.Unmarshal(w.Body.Bytes(), &ans)
		var out []string
		for _, l := range ans.Released {
			out = append(out, l.Info.ID)
		}
		slices.Sort(out)
		return out
	}
	if got := released(env.do("UNLOCK", "/v1/states/shared", mustJSON(t, locks[0]))); !slices.Equal(got, []string{"id-1"}) {
		t.Errorf("UNLOCK by alice released %v", got)
	}
	if got := released(env.do("UNLOCK", "/v1/states/shared", mustJSON(t, locks[0]))); len(got) != 0 {
		t.Errorf("UNLOCK by alice again released %v", got)
	}
	if got := released(env.do("UNLOCK", "/v1/states/shared", mustJSON(t, kilolock.LockInfo{ID: "id-2"}))); !slices.Equal(got, []string{"id-2"}) {
		t.Errorf("force-unlock of bob's id released %v", got)
	}
	if w := env.do("UNLOCK", "/v1/states/shared", mustJSON(t, kilolock.LockInfo{ID: "no-such-id"})); w.Code != http.StatusConflict {
		t.Errorf("force-unlock of an id nobody holds: %d, want 409", w.Code)
	}
	if ids, _ := env.holders("shared"); !slices.Equal(ids, []string{"id-3", "id-4"}) {
		t.Fatalf("holders %v, want carol's and dave's", ids)
	}
	if got := released(env.do("UNLOCK", "/v1/states/shared", nil)); !slices.Equal(got, []string{"id-3", "id-4"}) {
		t.Errorf("UNLOCK with an empty body released %v, want carol's and dave's", got)
	}
	logs := env.logs.String()
	for _, who := range []string{"bob", "carol", "dave"} {
		if !strings.Contains(logs, "holder="+who) {
			t.Errorf("the forced unlock of %s's lock is not logged:\n%s", who, logs)
		}
	}
	if ids, _ := env.holders("shared"); len(ids) != 0 {
		t.Errorf("holders %v after the empty-body unlock", ids)
	}
}

// TestWriteConflict: two optimistic holders change the same instance; the
// second is refused with the documented 409 body, the refusal is recorded
// and logged with its addresses, and the same holder's disjoint change is
// then merged.
func TestWriteConflict(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.optimistic("shared")
	env.post("shared", "", stateDoc(t, "lineage-1", 1, map[string]string{"x": "1", "y": "1", "z": "1"}))
	alice, bob := lockInfo("lock-alice", "alice"), lockInfo("lock-bob", "bob")
	env.lock("shared", alice)
	env.lock("shared", bob)

	env.post("shared", alice.ID, stateDoc(t, "lineage-1", 2, map[string]string{"x": "alice", "y": "1", "z": "1"}))
	w := env.do("POST", "/v1/states/shared?ID="+bob.ID, stateDoc(t, "lineage-1", 2, map[string]string{"x": "bob", "y": "1", "z": "1"}))
	if w.Code != http.StatusConflict {
		t.Fatalf("overlapping write: %d %s, want 409", w.Code, w.Body)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &fields); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"base_serial", "conflicting_addresses", "error", "hint", "latest_serial", "message", "request_id", "winner"}; !slices.Equal(keys, want) {
		t.Errorf("409 body has fields %v, want %v: %s", keys, want, w.Body)
	}
	e := errorOf(t, w)
	if e.Error != "conflict" || !slices.Equal(e.Addresses, []string{"terraform_data.x"}) ||
		e.LatestSerial == nil || *e.LatestSerial != 2 || e.BaseSerial == nil || *e.BaseSerial != 1 {
		t.Errorf("409 body = %s, want terraform_data.x in conflict, latest serial 2, base 1", w.Body)
	}
	if e.Winner == nil || e.Winner.LockID != alice.ID || e.Winner.Version != 2 || e.Winner.Actor != "alice" {
		t.Errorf("409 winner = %+v, want alice's lock at version 2", e.Winner)
	}
	if logs := env.logs.String(); !strings.Contains(logs, "conflicting_addresses=terraform_data.x") || !strings.Contains(logs, "status=409") {
		t.Errorf("the request log does not name the addresses in conflict:\n%s", logs)
	}
	if m := env.do("GET", "/metrics", nil).Body.String(); !strings.Contains(m, `kl_commits_refused_total{reason="conflict"} 1`) {
		t.Errorf("metrics do not count the refusal:\n%s", m)
	}

	w = env.do("GET", "/v1/api/states/shared/rejections?limit=10", nil)
	var rej struct {
		Rejections []kilolock.Rejection `json:"rejections"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &rej); err != nil || w.Code != http.StatusOK || len(rej.Rejections) != 1 {
		t.Fatalf("rejections: %d %s", w.Code, w.Body)
	}
	if r := rej.Rejections[0]; r.LockID != bob.ID || r.Actor != "bob" || r.Reason != kilolock.ReasonWriteConflict ||
		!slices.Equal(r.Addresses, []string{"terraform_data.x"}) || r.LatestSerial != 2 || r.BaseSerial != 1 ||
		r.Winner == nil || r.Winner.LockID != alice.ID || r.Hint == "" {
		t.Errorf("rejection = %+v", r)
	}

	// Bob re-plans on his own lock: a change alice did not touch merges.
	w = env.do("POST", "/v1/states/shared?ID="+bob.ID, stateDoc(t, "lineage-1", 2, map[string]string{"x": "1", "y": "bob", "z": "1"}))
	if w.Code != http.StatusOK {
		t.Fatalf("disjoint write: %d %s", w.Code, w.Body)
	}
	var ans writeAnswer
	json.Unmarshal(w.Body.Bytes(), &ans)
	if ans.Source != kilolock.SourceApply || !ans.Merged || ans.BaseSerial != 1 || ans.Version != 3 {
		t.Errorf("merge answer = %s, want an apply merged at version 3, base serial 1", w.Body)
	}
	if got := valuesOf(t, env.do("GET", "/v1/states/shared", nil).Body.Bytes()); got["x"] != "alice" || got["y"] != "bob" || got["z"] != "1" {
		t.Errorf("merged state = %v, want alice's x and bob's y", got)
	}

	for _, q := range []string{"?limit=-1", "?limit=1001", "?limit=x"} {
		if w := env.do("GET", "/v1/api/states/shared/rejections"+q, nil); w.Code != http.StatusBadRequest {
			t.Errorf("rejections%s: %d, want 400", q, w.Code)
		}
	}
	if w := env.do("GET", "/v1/api/states/nope/rejections", nil); w.Code != http.StatusNotFound {
		t.Errorf("rejections of an unknown state: %d, want 404", w.Code)
	}
}

package httpbackend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
)

// runOf decodes an ApplyRun answer, failing unless the status is want.
func runOf(t testing.TB, w *httptest.ResponseRecorder, want int) kilolock.ApplyRun {
	t.Helper()
	if w.Code != want {
		t.Fatalf("answer %d %s, want %d", w.Code, w.Body, want)
	}
	var r kilolock.ApplyRun
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("not an apply run: %v: %s", err, w.Body)
	}
	return r
}

// eachRunStore runs f on a Handler over each store kind.
func eachRunStore(t *testing.T, f func(t *testing.T, env *testEnv)) {
	for _, be := range benchBackends {
		t.Run(be.name, func(t *testing.T) {
			st, err := be.open(t)
			if err != nil {
				t.Fatal(err)
			}
			f(t, newEnvOn(t, st, Options{}))
		})
	}
}

// TestRunAPI drives two apply runs on an exclusive state through the JSON
// API and the backend protocol: reservations block each other and plain
// writers, a run's writes stay within its reservations, and an aborted run
// can neither renew nor write.
func TestRunAPI(t *testing.T) {
	eachRunStore(t, func(t *testing.T, env *testEnv) {
		env.post("app", "", stateDoc(t, "lineage-1", 1, map[string]string{"web": "a", "db": "a"}))
		start := func(actor, body string) kilolock.ApplyRun {
			t.Helper()
			return runOf(t, env.do("POST", "/v1/api/states/app/runs", []byte(body), "X-Kilolock-Actor", actor), http.StatusCreated)
		}
		alice := start("alice@laptop", `{"reservations":[{"pattern":"terraform_data.web","mode":"write"},{"pattern":"terraform_data.db","mode":"read"}],"lease":"1m","source_serial":1}`)
		if alice.Status != kilolock.RunWaiting || alice.Actor != "alice@laptop" || alice.Lease.Seconds() != 60 || len(alice.Reservations) != 2 {
			t.Fatalf("started run = %+v", alice)
		}
		if got := runOf(t, env.do("POST", "/v1/api/runs/"+alice.ID+"/acquire", nil), http.StatusOK); got.Status != kilolock.RunActive {
			t.Fatalf("acquired run is %s", got.Status)
		}

		bob := start("bob@ci", `{"actor":"bob@ci","reservations":[{"pattern":"terraform_data.web","mode":"write"}]}`)
		w := env.do("POST", "/v1/api/runs/"+bob.ID+"/acquire", nil)
		if w.Code != http.StatusLocked {
			t.Fatalf("acquire of a held address: %d %s, want 423", w.Code, w.Body)
		}
		e := errorOf(t, w)
		if e.Error != "reserved" || len(e.Blockers) != 1 || e.Blockers[0].Run != alice.ID || e.Blockers[0].Holder != "alice@laptop" ||
			e.Blockers[0].Pattern.String() != "terraform_data.web" || !strings.Contains(e.Hint, "kl apply abort --apply-id "+alice.ID) {
			t.Errorf("423 body = %s", w.Body)
		}

		var st kilolock.Status
		if w := env.do("GET", "/v1/api/states/app", nil); w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &st) != nil {
			t.Fatalf("status: %d %s", w.Code, w.Body)
		}
		if len(st.Runs) != 2 || st.Runs[0].ID != bob.ID || st.Runs[1].ID != alice.ID || st.Runs[1].Status != kilolock.RunActive {
			t.Errorf("status runs = %+v, want bob (waiting) then alice (active)", st.Runs)
		}

		// A plain apply's lock meets the run: 423 naming it, with the hint
		// to wait or abort it.
		w = env.do("LOCK", "/v1/states/app", mustJSON(t, lockInfo("plain-1", "carol")))
		if w.Code != http.StatusLocked {
			t.Fatalf("plain LOCK during a run: %d %s", w.Code, w.Body)
		}
		var holder lockedBody
		if err := json.Unmarshal(w.Body.Bytes(), &holder); err != nil || holder.ID != alice.ID || !strings.Contains(holder.Hint, "kl apply abort --apply-id "+alice.ID) {
			t.Errorf("plain LOCK's 423 = %s", w.Body)
		}

		// The run's own lock, and its writes.
		runLock := lockInfo("alice-apply", "alice@laptop")
		if w := env.do("LOCK", "/v1/states/app?run="+alice.ID, mustJSON(t, runLock)); w.Code != http.StatusOK {
			t.Fatalf("LOCK ?run=: %d %s", w.Code, w.Body)
		}
		env.post("app", runLock.ID, stateDoc(t, "lineage-1", 2, map[string]string{"web": "b", "db": "a"}))
		w = env.do("POST", "/v1/states/app?ID="+runLock.ID, stateDoc(t, "lineage-1", 3, map[string]string{"web": "b", "db": "b"}))
		if e := errorOf(t, w); w.Code != http.StatusConflict || e.Error != kilolock.ReasonOutOfScope || !slices.Equal(e.Addresses, []string{"terraform_data.db"}) {
			t.Errorf("a write outside the run's reservations: %d %s", w.Code, w.Body)
		}

		if got := runOf(t, env.do("POST", "/v1/api/runs/"+alice.ID+"/renew", nil), http.StatusOK); !got.Expires.After(alice.Expires) && !got.Expires.Equal(alice.Expires) {
			t.Errorf("renewal moved the lease back: %s -> %s", alice.Expires, got.Expires)
		}
		aborted := runOf(t, env.do("POST", "/v1/api/runs/"+alice.ID+"/abort", nil, "X-Kilolock-Actor", "ops@desk"), http.StatusOK)
		if aborted.Status != kilolock.RunAborted || aborted.EndedBy != "ops@desk" {
			t.Errorf("aborted run = %+v", aborted)
		}
		for _, action := range []string{"renew", "abort", "acquire"} {
			w := env.do("POST", "/v1/api/runs/"+alice.ID+"/"+action, nil)
			if e := errorOf(t, w); w.Code != http.StatusConflict || e.Error != "run_ended" || e.Run == nil || e.Run.Status != kilolock.RunAborted {
				t.Errorf("%s of an aborted run: %d %s, want 409 run_ended with the run", action, w.Code, w.Body)
			}
		}
		before, _ := env.engine.History(t.Context(), "app", kilolock.HistoryOptions{})
		w = env.do("POST", "/v1/states/app?ID="+runLock.ID, stateDoc(t, "lineage-1", 3, map[string]string{"web": "c", "db": "a"}))
		// Ending a run releases its lock too, so its CLI's later write
		// finds no lock (or, had it kept one, a run that is over).
		if e := errorOf(t, w); w.Code != http.StatusConflict || (e.Error != kilolock.ReasonRunEnded && e.Error != "lock_mismatch") {
			t.Errorf("a write of an aborted run: %d %s, want 409 %s or lock_mismatch", w.Code, w.Body, kilolock.ReasonRunEnded)
		}
		if after, _ := env.engine.History(t.Context(), "app", kilolock.HistoryOptions{}); len(after) != len(before) {
			t.Errorf("the aborted run's write was stored")
		}
		env.do("UNLOCK", "/v1/states/app", mustJSON(t, runLock))

		if got := runOf(t, env.do("POST", "/v1/api/runs/"+bob.ID+"/acquire", nil), http.StatusOK); got.Status != kilolock.RunActive {
			t.Errorf("the waiter after the abort: %s", got.Status)
		}
		w = env.do("POST", "/v1/api/states/app/changed-since", []byte(`{"serial":1,"patterns":["terraform_data.web","terraform_data.db"]}`))
		if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"addresses":["terraform_data.web"]}` {
			t.Errorf("changed-since: %d %s", w.Code, w.Body)
		}
		var list struct {
			Runs []kilolock.ApplyRun `json:"runs"`
		}
		if w := env.do("GET", "/v1/api/states/app/runs?in_flight=true", nil); w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &list) != nil || len(list.Runs) != 1 || list.Runs[0].ID != bob.ID {
			t.Errorf("runs in flight: %d %s, want bob's only", w.Code, w.Body)
		}
		ended := runOf(t, env.do("POST", "/v1/api/runs/"+bob.ID+"/end", []byte(`{"status":"succeeded","reason":"applied"}`)), http.StatusOK)
		if ended.Status != kilolock.RunSucceeded || ended.Reason != "applied" {
			t.Errorf("ended run = %+v", ended)
		}
		if w := env.do("GET", "/v1/api/runs/run_0123456789abcdef", nil); w.Code != http.StatusNotFound {
			t.Errorf("an unknown run: %d %s, want 404", w.Code, w.Body)
		}
	})
}

// TestRunReservedOptimistic: on an optimistic state a plain write touching
// a run's write reservation is refused naming it, and a disjoint one is
// merged.
func TestRunReservedOptimistic(t *testing.T) {
	eachRunStore(t, func(t *testing.T, env *testEnv) {
		env.post("opt", "", stateDoc(t, "lineage-1", 1, map[string]string{"web": "a", "db": "a"}))
		if w := env.do("POST", "/v1/api/states/opt/config", []byte(`{"exclusive_locks":false}`)); w.Code != http.StatusOK {
			t.Fatalf("config: %d %s", w.Code, w.Body)
		}
		run := runOf(t, env.do("POST", "/v1/api/states/opt/runs", []byte(`{"actor":"alice","reservations":[{"pattern":"terraform_data.web","mode":"write"}]}`)), http.StatusCreated)
		runOf(t, env.do("POST", "/v1/api/runs/"+run.ID+"/acquire", nil), http.StatusOK)

		plain := lockInfo("plain-1", "carol")
		env.lock("opt", plain)
		w := env.do("POST", "/v1/states/opt?ID="+plain.ID, stateDoc(t, "lineage-1", 2, map[string]string{"web": "z", "db": "a"}))
		if e := errorOf(t, w); w.Code != http.StatusConflict || e.Error != kilolock.ReasonReserved || !slices.Equal(e.Addresses, []string{"terraform_data.web"}) || !strings.Contains(e.Message, run.ID) {
			t.Errorf("a plain write on a reserved address: %d %s, want 409 reserved naming the run", w.Code, w.Body)
		}
		env.post("opt", plain.ID, stateDoc(t, "lineage-1", 2, map[string]string{"web": "a", "db": "b"}))
	})
}

// TestRunLeaseAnswer: a run's answer gives its lease as the request did,
// a Go duration ("15m0s"), never nanoseconds (900000000000); a client
// reads both.
func TestRunLeaseAnswer(t *testing.T) {
	eachRunStore(t, func(t *testing.T, env *testEnv) {
		env.post("app", "", stateDoc(t, "lineage-1", 1, map[string]string{"web": "a"}))
		w := env.do("POST", "/v1/api/states/app/runs", []byte(`{"reservations":[{"pattern":"terraform_data.web","mode":"write"}],"lease":"15m"}`))
		if w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `"lease":"15m0s"`) || strings.Contains(w.Body.String(), "900000000000") {
			t.Fatalf("start run: %d %s", w.Code, w.Body)
		}
		var old kilolock.ApplyRun
		if err := json.Unmarshal([]byte(`{"id":"run_1","lease":900000000000}`), &old); err != nil || old.Lease != 15*time.Minute {
			t.Errorf("a lease in nanoseconds reads as %v, %v", old.Lease, err)
		}
	})
}

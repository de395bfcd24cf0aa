package httpbackend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
)

// TestTwoReplicas runs two Handlers, each on its own Engine and store
// handle, on one SQLite file: two kld replicas behind a load balancer. The
// lock is one lock across both, and when clients write through both, every
// write lands as its own version and none is lost.
func TestTwoReplicas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	replicas := []*testEnv{newEnv(t, path, Options{}), newEnv(t, path, Options{})}
	a, b := replicas[0], replicas[1]

	// One holder across replicas.
	alice := lockInfo("11111111-aaaa", "alice")
	a.lock("prod", alice)
	if w := b.do("LOCK", "/v1/states/prod", mustJSON(t, lockInfo("22222222-bbbb", "bob"))); w.Code != http.StatusLocked {
		t.Fatalf("LOCK on the other replica of a held state: %d, want 423", w.Code)
	}
	doc := stateDoc(t, "lineage-1", 1, map[string]string{"seed": "0"})
	if w := b.do("POST", "/v1/states/prod", doc); w.Code != http.StatusLocked {
		t.Errorf("POST without the lock on the other replica: %d, want 423", w.Code)
	}
	b.post("prod", alice.ID, doc) // the holder may write through either replica
	if w := a.do("GET", "/v1/states/prod", nil); w.Code != http.StatusOK || w.Body.String() != string(doc) {
		t.Errorf("GET on the first replica after a write through the second: %d", w.Code)
	}
	if w := b.do("UNLOCK", "/v1/states/prod", mustJSON(t, alice)); w.Code != http.StatusOK {
		t.Fatalf("UNLOCK on the other replica: %d %s", w.Code, w.Body)
	}

	// Two writers, one per replica, each doing lock, read, write, unlock.
	const rounds = 8
	var (
		holders atomic.Int32
		wg      sync.WaitGroup
	)
	for i, env := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writer := fmt.Sprintf("w%d", i)
			for round := 1; round <= rounds; round++ {
				li := lockInfo(fmt.Sprintf("%s-round-%d", writer, round), writer)
				deadline := time.Now().Add(30 * time.Second)
				for {
					w := env.do("LOCK", "/v1/states/prod", mustJSON(t, li))
					if w.Code == http.StatusOK {
						break
					}
					if w.Code != http.StatusLocked || time.Now().After(deadline) {
						t.Errorf("%s LOCK: %d %s", writer, w.Code, w.Body)
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				if n := holders.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				w := env.do("GET", "/v1/states/prod", nil)
				serial, _ := strconv.ParseUint(w.Header().Get("X-Kilolock-Serial"), 10, 64)
				values := valuesOf(t, w.Body.Bytes())
				values[writer] = strconv.Itoa(round)
				next := stateDoc(t, "lineage-1", serial+1, values)
				if w := env.do("POST", "/v1/states/prod?ID="+li.ID, next); w.Code != http.StatusOK {
					t.Errorf("%s POST round %d: %d %s", writer, round, w.Code, w.Body)
				}
				holders.Add(-1)
				if w := env.do("UNLOCK", "/v1/states/prod", mustJSON(t, li)); w.Code != http.StatusOK {
					t.Errorf("%s UNLOCK: %d %s", writer, w.Code, w.Body)
				}
			}
		}()
	}
	wg.Wait()

	h, err := a.engine.History(t.Context(), "prod", kilolock.HistoryOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1+2*rounds {
		t.Errorf("history has %d versions, want %d (the seed and every write)", len(h), 1+2*rounds)
	}
	for i, v := range h {
		if want := uint64(len(h) - i); v.Serial != want || v.Number != int64(want) {
			t.Errorf("version %d has serial %d, want %d: a write was lost or reordered", v.Number, v.Serial, want)
		}
	}
	final := valuesOf(t, b.do("GET", "/v1/states/prod", nil).Body.Bytes())
	for i := range replicas {
		if got := final[fmt.Sprintf("w%d", i)]; got != strconv.Itoa(rounds) {
			t.Errorf("final state has w%d = %q, want %d: an update was lost", i, got, rounds)
		}
	}
}

// valuesOf reads back the resource values of a stateDoc document.
func valuesOf(t testing.TB, doc []byte) map[string]string {
	t.Helper()
	var s tfState
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatalf("state does not decode: %v", err)
	}
	values := map[string]string{}
	for _, r := range s.Resources {
		in, _ := r.Instances[0].Attributes["input"].(map[string]any)
		values[r.Name], _ = in["value"].(string)
	}
	return values
}

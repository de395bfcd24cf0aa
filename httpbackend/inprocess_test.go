package httpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kilolock/kilolock"
)

// TestInProcessOperator: an open server keeps tenancy, the audit log and
// backups closed to every request that comes over a socket, while the
// in-process operator (AsOperator, kl --database) is served them, its
// changes audited as its caller.
func TestInProcessOperator(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		srv := httptest.NewServer(env.h)
		defer srv.Close()
		closed := []struct {
			method, path string
			status       int
		}{
			{http.MethodPost, "/v1/api/workspaces", http.StatusNotFound},
			{http.MethodGet, "/v1/api/audit", http.StatusNotFound},
			{http.MethodGet, "/v1/api/backup", http.StatusForbidden},
			{http.MethodGet, "/v1/whoami", http.StatusNotFound},
		}
		for _, c := range closed {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, bytes.NewReader([]byte(`{"name":"acme"}`)))
			req.Header.Set(ActorHeader, "db:kl") // naming an actor opens nothing
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("%s %s over a socket: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
			}
		}

		by := kilolock.Caller{Actor: "db:ci", From: "kl@builder"}
		serve := func(method, path string, body []byte) *httptest.ResponseRecorder {
			var r *http.Request
			if body == nil {
				r = httptest.NewRequest(method, path, nil)
			} else {
				r = httptest.NewRequest(method, path, bytes.NewReader(body))
			}
			r.Header.Set(ActorHeader, "ci")
			w := httptest.NewRecorder()
			env.h.ServeHTTP(w, r.WithContext(AsOperator(context.Background(), by)))
			return w
		}
		if w := serve(http.MethodPost, "/v1/api/workspaces", []byte(`{"name":"acme"}`)); w.Code != http.StatusCreated {
			t.Fatalf("create a workspace in-process: %d %s", w.Code, w.Body)
		}
		w := serve(http.MethodGet, "/v1/api/audit", nil)
		var entries []kilolock.AuditEntry
		if err := json.Unmarshal(w.Body.Bytes(), &entries); err != nil || w.Code != http.StatusOK {
			t.Fatalf("audit in-process: %d %s", w.Code, w.Body)
		}
		if len(entries) == 0 || entries[0].Actor != by.Actor || entries[0].From != by.From {
			t.Errorf("audit of the in-process operator's change: %+v, want actor %q from %q", entries, by.Actor, by.From)
		}
		if w := serve(http.MethodGet, "/v1/api/backup", nil); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("backup in-process: %d (%d bytes)", w.Code, w.Body.Len())
		}
		// The versions it makes name the client's actor, not the caller
		// its changes are audited as.
		if _, err := env.engine.Write(context.Background(), "app", stateDoc(t, "lin-1", 1, map[string]string{"a": "v0"}), kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		w = serve(http.MethodPost, "/v1/api/states/app/refresh", stateDoc(t, "lin-1", 1, map[string]string{"a": "v1"}))
		var refreshed struct{ Version *kilolock.Version }
		if err := json.Unmarshal(w.Body.Bytes(), &refreshed); err != nil || refreshed.Version == nil || refreshed.Version.Actor != "ci" {
			t.Errorf("refresh in-process: %d %s, want a version by ci", w.Code, w.Body)
		}
	})
}

package httpbackend

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// TestControlAPI drives the control API as an operator: it sets up a
// tenant, serves it, offboards it, and every change is audited.
func TestControlAPI(t *testing.T) {
	env, _ := newAuthEnv(t)
	op := bearer(operatorSecret)
	call := func(method, target, body string, want int, v any) {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		w := env.do(method, target, b, op...)
		if w.Code != want {
			t.Fatalf("%s %s = %d %s; want %d", method, target, w.Code, w.Body, want)
		}
		if v != nil {
			if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	var ws tenancy.Workspace
	call("POST", "/v1/api/workspaces", `{"name":"acme","kind":"organization","owner":"alice"}`, 201, &ws)
	call("POST", "/v1/api/workspaces", `{"name":"acme","kind":"galaxy"}`, 400, nil)
	var e tenancy.Environment
	call("POST", "/v1/api/workspaces/"+ws.ID+"/environments", `{"slug":"prod"}`, 201, &e)
	call("POST", "/v1/api/workspaces/"+ws.ID+"/environments", `{"slug":"prod"}`, 409, nil)
	call("POST", "/v1/api/workspaces/ws_missing/environments", `{"slug":"prod"}`, 404, nil)
	var envs []tenancy.Environment
	call("GET", "/v1/api/workspaces/"+ws.ID+"/environments", "", 200, &envs)
	if len(envs) != 1 || envs[0].PublicID != e.PublicID {
		t.Errorf("environments = %+v", envs)
	}
	var auto, pat issuedToken
	call("POST", "/v1/api/tokens", `{"kind":"automation","environment_id":"`+e.PublicID+`"}`, 201, &auto)
	call("POST", "/v1/api/tokens", `{"kind":"personal","user_id":"alice"}`, 201, &pat)
	call("POST", "/v1/api/tokens", `{"kind":"personal"}`, 400, nil)
	for _, lifetime := range []string{"213503983d", "99999999999d", "3651d", "2562047h"} {
		w := env.do("POST", "/v1/api/tokens", []byte(`{"kind":"personal","user_id":"alice","expires_in":"`+lifetime+`"}`), op...)
		if e := errorOf(t, w); w.Code != 400 || e.Error != "invalid_token" || !strings.Contains(e.Message, "3650 days") {
			t.Errorf("expires_in %s: %d %s; want 400 invalid_token naming the maximum", lifetime, w.Code, w.Body)
		}
	}
	if !strings.HasPrefix(auto.Secret, "klt_") || !strings.HasPrefix(pat.Secret, "klp_") {
		t.Fatalf("secrets %q %q", auto.Secret, pat.Secret)
	}
	var listed []json.RawMessage
	call("GET", "/v1/api/tokens", "", 200, &listed)
	for _, l := range listed {
		if strings.Contains(string(l), "klt_") || strings.Contains(string(l), "klp_") || strings.Contains(string(l), "hash") {
			t.Errorf("the token listing shows a secret or hash: %s", l)
		}
	}
	path := "/v1/states/" + ws.ID + "/" + e.PublicID + "/app"
	doc := stateDoc(t, "lin", 1, map[string]string{"web": "v1"})
	post := func(h []string) int {
		return env.do("POST", path, doc, append(cloned(h), "Content-MD5", md5Of(doc))...).Code
	}
	if c := post(bearer(auto.Secret)); c != 200 {
		t.Fatalf("automation POST = %d", c)
	}
	if c := post(basic(ws.ID, pat.Secret)); c != http.StatusForbidden {
		t.Errorf("PAT without a grant POST = %d, want 403", c)
	}
	call("PUT", "/v1/api/tokens/"+pat.ID+"/grants/"+e.PublicID, "", 200, nil)
	if c := post(basic(ws.ID, pat.Secret)); c != 200 {
		t.Errorf("PAT with a grant POST = %d", c)
	}
	call("POST", "/v1/api/workspaces/"+ws.ID+"/suspend", "", 200, nil)
	if c := post(bearer(auto.Secret)); c != http.StatusForbidden {
		t.Errorf("POST on a suspended workspace = %d", c)
	}
	call("POST", "/v1/api/workspaces/"+ws.ID+"/resume", "", 200, nil)
	call("POST", "/v1/api/workspaces/"+ws.ID+"/environments/"+e.PublicID+"/states/app/archive", "", 200, nil)
	if c := post(bearer(auto.Secret)); c != http.StatusForbidden {
		t.Errorf("POST on an archived state = %d", c)
	}
	call("POST", "/v1/api/workspaces/"+ws.ID+"/environments/"+e.PublicID+"/states/app/restore", "", 200, nil)
	if c := post(bearer(auto.Secret)); c != 200 {
		t.Errorf("POST after restore = %d", c)
	}
	// Offboarding: removing the member cuts the PAT off at once. The last
	// owner stays until another owner is made.
	call("DELETE", "/v1/api/workspaces/"+ws.ID+"/members/alice", "", 409, nil)
	call("PUT", "/v1/api/workspaces/"+ws.ID+"/members/carol", `{"role":"owner"}`, 200, nil)
	call("DELETE", "/v1/api/workspaces/"+ws.ID+"/members/alice", "", 200, nil)
	if c := post(basic(ws.ID, pat.Secret)); c != http.StatusForbidden {
		t.Errorf("PAT of a removed member POST = %d, want 403", c)
	}
	call("PUT", "/v1/api/workspaces/"+ws.ID+"/members/alice", `{"role":"admin"}`, 200, nil)
	// Deleting the PAT removes its grants; the next request fails.
	call("DELETE", "/v1/api/tokens/"+pat.ID, "", 200, nil)
	var grants []tenancy.Grant
	call("GET", "/v1/api/tokens/"+pat.ID+"/grants", "", 200, &grants)
	if len(grants) != 0 {
		t.Errorf("grants of a deleted PAT = %+v", grants)
	}
	if c := post(basic(ws.ID, pat.Secret)); c != http.StatusUnauthorized {
		t.Errorf("deleted PAT POST = %d, want 401", c)
	}
	call("GET", "/v1/api/workspaces", "", 200, nil) // the operator is unaffected

	var audit []kilolock.AuditEntry
	call("GET", "/v1/api/audit", "", 200, &audit)
	actions := map[string]bool{}
	for _, a := range audit {
		actions[a.Action] = true
		if !a.Denied && a.Actor != "operator" {
			t.Errorf("change audited as %q", a.Actor)
		}
	}
	for _, want := range []string{"workspace.create", "environment.create", "token.issue", "grant.add", "workspace.suspend", "workspace.resume", "state.archive", "state.restore", "member.remove", "member.add", "token.revoke"} {
		if !actions[want] {
			t.Errorf("no audit entry for %s", want)
		}
	}
	call("GET", "/v1/api/audit?denied=true", "", 200, &audit)
	if len(audit) == 0 {
		t.Error("no denial listed")
	}
	for _, a := range audit {
		if !a.Denied {
			t.Errorf("denied=true listed %+v", a)
		}
	}
}

// TestControlAPINames: the control API refuses oversized names and NUL
// bytes in names and ids with a 400 that does not echo them, on each store
// (PostgreSQL would otherwise fail the statement), and creates nothing.
func TestControlAPINames(t *testing.T) { eachAuthEnv(t, testControlAPINames) }

func testControlAPINames(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	op := bearer(operatorSecret)
	a := seedTenant(t, ts, "acme", "prod")
	huge := strings.Repeat("x", 100<<10)
	for _, tt := range []struct {
		name, method, target, body, code string
	}{
		{"100 KB workspace name", "POST", "/v1/api/workspaces", `{"name":"` + huge + `"}`, "invalid_workspace"},
		{"NUL in a workspace name", "POST", "/v1/api/workspaces", `{"name":"ac\u0000me"}`, "invalid_workspace"},
		{"NUL in an owner", "POST", "/v1/api/workspaces", `{"name":"acme","owner":"al\u0000ice"}`, "invalid_member"},
		{"100 KB slug", "POST", "/v1/api/workspaces/" + a.ws.ID + "/environments", `{"slug":"` + huge + `"}`, "invalid_slug"},
		{"NUL in a member", "PUT", "/v1/api/workspaces/" + a.ws.ID + "/members/b%00b", `{}`, "invalid_member"},
		{"NUL in a token name", "POST", "/v1/api/tokens", `{"kind":"personal","user_id":"bob","name":"ci\u0000"}`, "invalid_token"},
		{"right-to-left override in a workspace name", "POST", "/v1/api/workspaces", `{"name":"acme\u202egnp.exe"}`, "invalid_workspace"},
		{"isolate in a workspace name", "POST", "/v1/api/workspaces", `{"name":"\u2067acme\u2069"}`, "invalid_workspace"},
		{"zero-width space in a token name", "POST", "/v1/api/tokens", `{"kind":"personal","user_id":"bob","name":"ci\u200bdeploy"}`, "invalid_token"},
		{"NUL in a workspace id", "GET", "/v1/api/workspaces/ws_%00/environments", "", "invalid_id"},
		{"NUL in a token kind", "GET", "/v1/api/tokens?kind=a%00", "", "invalid_token"},
		{"NUL in a grant", "PUT", "/v1/api/tokens/" + a.patTok.ID + "/grants/env_%00", "", "invalid_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			w := env.do(tt.method, tt.target, body, op...)
			if e := errorOf(t, w); w.Code != http.StatusBadRequest || e.Error != tt.code || w.Body.Len() > 1000 {
				t.Errorf("%s %.60s = %d %.300s; want 400 %s", tt.method, tt.target, w.Code, w.Body, tt.code)
			}
		})
	}
	var wss []tenancy.Workspace
	if err := json.Unmarshal(env.do("GET", "/v1/api/workspaces", nil, op...).Body.Bytes(), &wss); err != nil || len(wss) != 1 {
		t.Errorf("workspaces after the refusals: %+v, %v; want only acme", wss, err)
	}
}

package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

const operatorSecret = "klo_e2e-operator-secret-0123456789abcdef"

// asOperator sends a request with the operator token.
func asOperator(r *http.Request) { r.Header.Set("Authorization", "Bearer "+operatorSecret) }

// operator calls the control API with the operator token and decodes the
// answer into v, failing the test unless the status is want.
func operator(t *testing.T, srv *tofu.Server, method, path, body string, want int, v any) {
	t.Helper()
	code, b := send(t, method, srv.URL+path, []byte(body), asOperator)
	if code != want {
		t.Fatalf("%s %s = %d %s; want %d", method, path, code, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// TestAuthLane drives the real OpenTofu CLI through the authenticated lane:
// an automation token and a PAT with a grant (credentials from
// TF_HTTP_USERNAME/TF_HTTP_PASSWORD) apply; a PAT without a grant, a
// revoked PAT and a suspended workspace are refused, and kld logs why.
func TestAuthLane(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := tofu.StartKLD(t, databaseURL, "--auth=token", "--operator-token="+operatorSecret)
		var ws struct{ ID string }
		operator(t, srv, "POST", "/v1/api/workspaces", `{"name":"acme","kind":"organization","owner":"alice"}`, 201, &ws)
		var env struct {
			PublicID string `json:"public_id"`
		}
		operator(t, srv, "POST", "/v1/api/workspaces/"+ws.ID+"/environments", `{"slug":"prod"}`, 201, &env)
		type issued struct{ ID, Secret string }
		var auto, pat issued
		operator(t, srv, "POST", "/v1/api/tokens", `{"kind":"automation","environment_id":"`+env.PublicID+`","scope":"read-write"}`, 201, &auto)
		operator(t, srv, "POST", "/v1/api/tokens", `{"kind":"personal","user_id":"alice"}`, 201, &pat)

		workdir := func(state, secret string) *tofu.Workdir {
			wd := tofu.NewWorkdir(t, srv.Backend(ws.ID+"/"+env.PublicID+"/"+state)+smallConfig("v1"))
			wd.Setenv("TF_HTTP_USERNAME", ws.ID)
			wd.Setenv("TF_HTTP_PASSWORD", secret)
			return wd
		}

		// Happy path: an automation token.
		ci := workdir("network", auto.Secret)
		ci.Must("init", "-no-color")
		if out := ci.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete!") {
			t.Fatalf("apply with an automation token:\n%s", out)
		}

		// A PAT without a grant is refused; with one it applies, and kld
		// names the request as PAT-backed.
		dev := workdir("app", pat.Secret)
		if _, stderr, code := dev.Run("init", "-no-color"); code == 0 {
			t.Fatal("init with an ungranted PAT succeeded")
		} else if !srv.WaitLog(t.Context(), "grant_missing", 5*time.Second) {
			t.Errorf("kld did not log grant_missing; tofu said:\n%s", stderr)
		}
		operator(t, srv, "PUT", "/v1/api/tokens/"+pat.ID+"/grants/"+env.PublicID, "", 200, nil)
		dev.Must("init", "-no-color", "-reconfigure")
		dev.Must("apply", "-auto-approve", "-no-color")
		if !srv.WaitLog(t.Context(), "pat:"+pat.ID, 5*time.Second) {
			t.Error("kld does not name the PAT-backed requests")
		}

		// A revoked PAT fails on the very next request.
		operator(t, srv, "DELETE", "/v1/api/tokens/"+pat.ID, "", 200, nil)
		dev.WriteFile("main.tf", srv.Backend(ws.ID+"/"+env.PublicID+"/app")+smallConfig("v2"))
		if _, _, code := dev.Run("apply", "-auto-approve", "-no-color"); code == 0 {
			t.Error("apply with a revoked PAT succeeded")
		}
		if !srv.WaitLog(t.Context(), "credentials_invalid", 5*time.Second) {
			t.Error("kld did not log credentials_invalid for the revoked PAT")
		}

		// A suspended workspace refuses apply; resuming brings it back.
		operator(t, srv, "POST", "/v1/api/workspaces/"+ws.ID+"/suspend", "", 200, nil)
		ci.WriteFile("main.tf", srv.Backend(ws.ID+"/"+env.PublicID+"/network")+smallConfig("v2"))
		if _, _, code := ci.Run("apply", "-auto-approve", "-no-color"); code == 0 {
			t.Error("apply in a suspended workspace succeeded")
		}
		if !srv.WaitLog(t.Context(), "workspace_suspended", 5*time.Second) {
			t.Error("kld did not log workspace_suspended")
		}
		operator(t, srv, "POST", "/v1/api/workspaces/"+ws.ID+"/resume", "", 200, nil)
		ci.Must("apply", "-auto-approve", "-no-color")

		var denied []struct {
			Reason string `json:"reason"`
		}
		operator(t, srv, "GET", "/v1/api/audit?denied=true", "", 200, &denied)
		reasons := map[string]bool{}
		for _, d := range denied {
			reasons[d.Reason] = true
		}
		for _, want := range []string{"grant_missing", "credentials_invalid", "workspace_suspended"} {
			if !reasons[want] {
				t.Errorf("the audit log lists no %s denial (has %v)", want, reasons)
			}
		}
	})
}

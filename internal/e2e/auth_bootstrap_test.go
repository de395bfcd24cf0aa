package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestAuthBootstrapFromDatabase follows the README: tenancy is set up with
// kl --database before kld runs, kld --auth=token serves it (with no
// operator token at all), a change kl makes on the database while kld runs
// counts from tofu's next request, and the audit log is a table kl query
// reads.
func TestAuthBootstrapFromDatabase(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		db := func(v any, args ...string) {
			t.Helper()
			out := mustKL(t, append([]string{"--database", databaseURL, "--actor", "ops"}, args...)...)
			if v != nil {
				if err := json.Unmarshal([]byte(out), v); err != nil {
					t.Fatalf("kl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
		}
		var ws struct{ ID string }
		db(&ws, "workspace", "create", "acme", "--owner", "alice", "--json")
		var env struct {
			PublicID string `json:"public_id"`
		}
		db(&env, "env", "create", "--workspace", ws.ID, "prod", "--json")
		var tok struct{ Secret string }
		db(&tok, "token", "issue", "--env", env.PublicID, "--json")

		srv := tofu.StartKLD(t, databaseURL, "--auth=token")
		wd := tofu.NewWorkdir(t, srv.Backend(ws.ID+"/"+env.PublicID+"/network")+smallConfig("v1"))
		wd.Setenv("TF_HTTP_USERNAME", ws.ID)
		wd.Setenv("TF_HTTP_PASSWORD", tok.Secret)
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")

		// Suspended on the database while kld runs: the next apply is refused.
		db(nil, "workspace", "suspend", ws.ID)
		wd.WriteFile("main.tf", srv.Backend(ws.ID+"/"+env.PublicID+"/network")+smallConfig("v2"))
		if _, stderr, code := wd.Run("apply", "-auto-approve", "-no-color"); code != 1 {
			t.Fatalf("apply in a workspace suspended on the database: exit %d, want 1\n%s", code, stderr)
		}
		if !srv.WaitLog(t.Context(), "reason=workspace_suspended", 0) {
			t.Error("kld did not log workspace_suspended")
		}
		db(nil, "workspace", "resume", ws.ID)
		wd.Must("apply", "-auto-approve", "-no-color")

		// A token with a lifetime works until it ends, then is refused.
		var brief struct {
			Secret  string
			Expires time.Time
		}
		db(&brief, "token", "issue", "--env", env.PublicID, "--expires-in", "20s", "--json")
		wd.Setenv("TF_HTTP_PASSWORD", brief.Secret)
		wd.Must("plan", "-no-color")
		time.Sleep(time.Until(brief.Expires) + 100*time.Millisecond)
		if _, stderr, code := wd.Run("plan", "-no-color"); code != 1 || !strings.Contains(stderr, "requires auth") {
			t.Errorf("plan with an expired token: exit %d, want 1 with tofu's 401 message\n%s", code, stderr)
		}
		if !srv.WaitLog(t.Context(), "reason=credentials_expired", 0) {
			t.Error("kld did not log credentials_expired")
		}

		// Without an operator token the control API is closed.
		if code, body := request(t, "GET", srv.URL+"/v1/api/workspaces", nil); code != 403 || !strings.Contains(string(body), "control_api_closed") {
			t.Errorf("GET /v1/api/workspaces on a kld without an operator token = %d %s, want 403 control_api_closed", code, body)
		}
		out := mustKL(t, "--database", databaseURL, "query", "SELECT actor, action FROM audit_log WHERE NOT denied ORDER BY id")
		for _, want := range []string{"db:ops", "workspace.create", "environment.create", "token.issue", "workspace.suspend", "workspace.resume"} {
			if !strings.Contains(out, want) {
				t.Errorf("kl query on audit_log does not show %q:\n%s", want, out)
			}
		}
	})
}

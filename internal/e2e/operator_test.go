package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestOperatorTokenMadeAndRefused: kl token operator prints a fresh
// operator token kld takes; kld refuses hunter2 and other short or
// unprefixed ones at start, saying how to make one; and the operator token
// sent on a state's path is answered with what it reaches and the token to
// use, audited as the operator's. Both stores.
func TestOperatorTokenMadeAndRefused(t *testing.T) {
	t.Parallel()
	made := strings.TrimSpace(mustKL(t, "token", "operator"))
	if !regexp.MustCompile(`^klo_[0-9a-f]{64}$`).MatchString(made) {
		t.Fatalf("kl token operator printed %q", made)
	}
	if again := strings.TrimSpace(mustKL(t, "token", "operator")); again == made {
		t.Fatal("kl token operator printed the same token twice")
	}
	eachStore(t, func(t *testing.T, databaseURL string) {
		for _, bad := range []string{"hunter2", "klo_short", "klt_" + strings.Repeat("0", 64)} {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			cmd := exec.CommandContext(ctx, tofu.BuildKLD(t), "--database", databaseURL, "--listen", "127.0.0.1:0", "--auth=token", "--operator-token", bad)
			cmd.Env = tofu.CleanEnv("KL_")
			out, err := cmd.CombinedOutput()
			cancel()
			if err == nil || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "kl token operator") {
				t.Errorf("kld --operator-token %s: %v\n%s", bad, err, out)
			}
		}

		srv := tofu.StartKLD(t, databaseURL, "--auth=token", "--operator-token="+made)
		mustKL(t, "--server", srv.URL, "--token", made, "workspace", "list")

		c := startChecklist(t, databaseURL)
		mark := len(c.srv.Log())
		code, body := c.stateRequest(t, http.MethodGet, c.path("app"), "", operatorSecret, "", nil)
		var eb struct{ Error, Message, Hint string }
		if err := json.Unmarshal(body, &eb); err != nil || code != http.StatusUnauthorized || eb.Error != "operator_token_on_state" ||
			!strings.Contains(eb.Message, "not states") || !strings.Contains(eb.Hint, "kl token issue --env "+c.env) {
			t.Errorf("the operator token on a state: %d %s", code, body)
		}
		expectDenial(t, c.srv, mark, "operator_token_on_state")
		d := c.withBlock(t, c.path("app"), c.ws, operatorSecret)
		d.config(countConfig)
		if _, stderr, code := d.Run("init", "-no-color"); code == 0 || !strings.Contains(flat(stderr), tofuSays[http.StatusUnauthorized]) {
			t.Errorf("tofu init with the operator token: exit %d\n%s", code, stderr)
		}
		audit := mustKL(t, c.asOp("audit", "--denied", "--json")...)
		if !strings.Contains(audit, `"actor": "operator"`) || !strings.Contains(audit, "operator_token_on_state") {
			t.Errorf("the audit log does not name the operator's refusal:\n%s", audit)
		}
	})
}

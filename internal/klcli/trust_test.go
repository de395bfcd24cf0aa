package klcli_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// TestTrustCommands drives kl trust add|list|remove as the operator of a
// token-mode server and on a database directly (SQLite and PostgreSQL):
// add prints the id, list shows the policy as given, remove takes it away,
// each change audited; bad input is refused, nothing stored.
func TestTrustCommands(t *testing.T) {
	forEachControlTarget(t, func(t *testing.T, s *klSession) {
		var ws tenancy.Workspace
		decodeJSON(t, s.kl("workspace", "create", "acme", "--json"), &ws)
		var env tenancy.Environment
		decodeJSON(t, s.kl("env", "create", "--workspace", ws.ID, "prod", "--json"), &env)

		out := s.kl("trust", "add", "--env", env.PublicID, "--issuer", "https://token.actions.githubusercontent.com",
			"--audience", "https://kl.example.com", "--claim", "repository=org/app", "--claim", "environment=prod,eu",
			"--claim-glob", "ref=refs/heads/*", "--scope", "read-write", "--state", "app-*", "--max-ttl", "15m")
		id, _, _ := strings.Cut(out, "\n")
		if !regexp.MustCompile(`^trs_[0-9a-f]{16}$`).MatchString(id) {
			t.Fatalf("kl trust add printed %q first, want the policy's id:\n%s", id, out)
		}
		var got []trust.Policy
		decodeJSON(t, s.kl("trust", "list", "--json"), &got)
		if len(got) != 1 || got[0].ID != id || got[0].Claims["environment"] != "prod,eu" || got[0].ClaimGlobs["ref"] != "refs/heads/*" ||
			got[0].Scope != tenancy.ScopeReadWrite || got[0].StatePattern != "app-*" || got[0].MaxTTL.String() != "15m0s" {
			t.Errorf("trust list = %+v", got)
		}
		if out := s.kl("trust", "list", "--env", env.PublicID); !strings.Contains(out, id) || !strings.Contains(out, "repository=org/app") || !strings.Contains(out, "ref~refs/heads/*") {
			t.Errorf("trust list:\n%s", out)
		}
		for _, bad := range [][]string{
			{"--issuer", "http://insecure.example.com", "--claim", "repository=org/app"},
			{"--issuer", "https://gitlab.com"}, // no claim: every job of the issuer
			{"--issuer", "https://gitlab.com", "--claim", "project_path"},
			{"--issuer", "https://gitlab.com", "--claim", "project_path=g/app", "--max-ttl", "2d"},
		} {
			args := append([]string{"trust", "add", "--env", env.PublicID, "--audience", "a", "--scope", "read"}, bad...)
			if _, err := s.run(args...); err == nil {
				t.Errorf("kl %v succeeded", args)
			}
		}
		if _, err := s.run("trust", "add", "--env", "env_0123456789abcdef", "--issuer", "https://gitlab.com", "--audience", "a",
			"--claim", "project_path=g/app", "--scope", "read"); err == nil || !strings.Contains(err.Error(), "no environment") {
			t.Errorf("a policy of a missing environment: %v", err)
		}
		if out := s.kl("trust", "remove", id); !strings.Contains(out, "Removed trust policy "+id) {
			t.Errorf("kl trust remove: %s", out)
		}
		if _, err := s.run("trust", "remove", id); err == nil {
			t.Error("removing it again succeeded")
		}
		decodeJSON(t, s.kl("trust", "list", "--json"), &got)
		if len(got) != 0 {
			t.Errorf("trust list after the removal = %+v", got)
		}
		var audit []kilolock.AuditEntry
		decodeJSON(t, s.kl("audit", "--json"), &audit)
		actions := map[string]bool{}
		for _, e := range audit {
			if strings.HasPrefix(e.Target, id) {
				actions[e.Action] = true
			}
		}
		if !actions["trust.add"] || !actions["trust.remove"] || len(actions) != 2 {
			t.Errorf("audit of %s: %v, want trust.add and trust.remove", id, actions)
		}
	})
}

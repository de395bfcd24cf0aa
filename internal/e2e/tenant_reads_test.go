package e2e_test

import (
	"strings"
	"testing"
)

// TestTenantTokenReads: a tenant's own automation token runs kl's read
// commands on its state by the short name it knows (and by the internal
// one), without the operator; a state of another environment stays out of
// reach, and a write through the API still takes the operator token. The
// operator, who reaches every tenant, gets a hint naming the full name when
// a short one matches a tenant's state. Both stores.
func TestTenantTokenReads(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		d := c.withBlock(t, c.path("app"), c.ws, c.auto.Secret)
		d.Must("init", "-no-color")
		d.Must("apply", "-auto-approve", "-no-color")
		d.rev("v2")
		d.Must("apply", "-auto-approve", "-no-color")
		as := func(args ...string) []string {
			return append([]string{"--server", c.srv.URL, "--token", c.auto.Secret}, args...)
		}
		for _, name := range []string{"app", c.internal(t, "app")} {
			for _, args := range [][]string{
				{"status", name}, {"history", name}, {"show", name}, {"show", name, "@1"},
				{"diff", name, "@1"}, {"state", "list", name}, {"state", "show", name, "terraform_data.counted[0]"},
				{"state", "pull", name}, {"export", name, "@1"}, {"conflicts", name}, {"tag", "list", name},
				{"graph", name, "--address", "terraform_data.counted[0]"}, {"history", name, "--address", "terraform_data.counted[0]"},
			} {
				mustKL(t, as(args...)...)
			}
		}
		if out := mustKL(t, as("status", "app")...); !strings.Contains(out, c.internal(t, "app")) && !strings.Contains(out, "app") {
			t.Errorf("kl status app:\n%s", out)
		}
		if pulled := mustKL(t, as("state", "pull", "app")...); parseState(t, []byte(pulled)).Serial != pulledSerial(t, d) {
			t.Errorf("kl state pull app with the tenant's token is not the state tofu reads")
		}

		// The operator, by the short name: a hint naming the full one.
		if _, errOut, code := kl(t, c.asOp("status", "app")...); code != 3 || !strings.Contains(errOut, c.internal(t, "app")) {
			t.Errorf("the operator's kl status app: exit %d, want 3 with a hint naming %s\n%s", code, c.internal(t, "app"), errOut)
		}
		mustKL(t, c.asOp("status", c.internal(t, "app"))...)

		other := startChecklistOn(t, c.srv, "globex")
		theirs := other.internal(t, "app")
		if _, errOut, code := kl(t, as("status", theirs)...); code == 0 {
			t.Errorf("kl status of another workspace's state with acme's token: exit 0\n%s", errOut)
		}
		if _, errOut, code := kl(t, as("rollback", "app", "--to", "@1", "--apply", "--yes")...); code == 0 {
			t.Errorf("a rollback with the tenant's token: exit 0, want the operator's to be needed\n%s", errOut)
		}
	})
}

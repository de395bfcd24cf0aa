package e2e_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestTenantQuery: after a real apply through the authenticated lane, kl
// query with the applying token, a read token and a PAT sees that state's
// rows; another workspace's token sees none of them; an outputs token may
// not query; the operator sees everything.
func TestTenantQuery(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		producer := c.withBlock(t, c.path("network"), c.ws, c.auto.Secret)
		producer.config(smallConfig("v1"))
		producer.Must("init", "-no-color")
		producer.Must("apply", "-auto-approve", "-no-color")

		// Another tenant, with a state of its own.
		other := startChecklistOn(t, c.srv, "globex")
		otherWd := other.withBlock(t, other.path("network"), other.ws, other.auto.Secret)
		otherWd.config(smallConfig("v1"))
		otherWd.Must("init", "-no-color")
		otherWd.Must("apply", "-auto-approve", "-no-color")

		const sql = "SELECT state, count(*) AS n FROM resources GROUP BY state ORDER BY state"
		for _, tok := range []struct{ kind, secret string }{
			{"read-write token", c.auto.Secret},
			{"read token", c.automation(t, "read").Secret},
			{"PAT", c.pat(t, "alice", true).Secret},
		} {
			out := mustKL(t, "--server", c.srv.URL, "--token", tok.secret, "query", sql)
			if !strings.Contains(out, c.ws+"."+c.env+".network") || strings.Contains(out, other.ws) || !strings.Contains(out, "(1 row)") {
				t.Errorf("kl query with the %s:\n%s", tok.kind, out)
			}
		}
		if out := mustKL(t, "--server", c.srv.URL, "--token", other.auto.Secret, "query", sql); strings.Contains(out, c.ws) || !strings.Contains(out, other.ws) {
			t.Errorf("kl query with the other tenant's token:\n%s", out)
		}
		if out := mustKL(t, "--server", c.srv.URL, "--token", operatorSecret, "query", sql); !strings.Contains(out, c.ws) || !strings.Contains(out, other.ws) {
			t.Errorf("the operator's kl query:\n%s", out)
		}
		_, errOut, code := kl(t, "--server", c.srv.URL, "--token", c.automation(t, "outputs").Secret, "query", sql)
		if code == 0 || !strings.Contains(errOut, "query_scope_empty") && !strings.Contains(errOut, "nothing to query") {
			t.Errorf("an outputs token's kl query: exit %d\n%s", code, errOut)
		}
		_, errOut, code = kl(t, "--server", c.srv.URL, "--token", c.auto.Secret, "query", "SELECT * FROM audit_log")
		if code == 0 {
			t.Errorf("a tenant read the audit log:\n%s", errOut)
		}
		if code, _ := send(t, http.MethodPost, c.srv.URL+"/v1/api/query", []byte(`{"sql":"SELECT 1"}`)); code != http.StatusUnauthorized {
			t.Errorf("a query without credentials = %d", code)
		}
	})
}

package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/store/storetest"
	"github.com/kilolock/kilolock/tenancy"
)

// TestTenantQuery: after a real apply through the authenticated lane, kl
// query with the applying token, a read token and a PAT sees that state's
// rows; another workspace's token sees none of them; an outputs token may
// not query; the operator sees everything. Then the cross-tenant matrix:
// each kind of credential sends the hostile battery through kld.
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

		// The cross-tenant matrix through kld: every hostile statement of
		// every kind of credential answers its own rows or a refusal.
		hostileMatrix(t, c, other, []matrixCred{
			{"read-write token", c.auto.Secret, false},
			{"read token", c.automation(t, "read").Secret, false},
			{"PAT with a grant", c.pat(t, "alice", true).Secret, false},
			{"outputs token", c.automation(t, "outputs").Secret, true},
			{"the other tenant's read token", other.automation(t, "read").Secret, false},
		})
	})
}

// matrixCred is a credential of the cross-tenant matrix; a refused one may
// not query at all.
type matrixCred struct {
	kind, secret string
	refused      bool
}

// hostileMatrix sends every storetest.HostileQueries statement, and a read
// of every view, to kld's POST /v1/api/query with each credential of c
// (the last one's of other): each answer is a 200 holding nothing of the
// other tenant, or a 400/403 refusal with a hint; never a 5xx.
func hostileMatrix(t *testing.T, c, other *checklist, creds []matrixCred) {
	t.Helper()
	battery := append([]string{}, storetest.HostileQueries...)
	for _, r := range tenancy.TenantQueryRelations {
		battery = append(battery, "SELECT * FROM "+r)
	}
	for i, cr := range creds {
		own, foreign := c, other
		if i == len(creds)-1 {
			own, foreign = other, c
		}
		answered := 0
		for _, q := range battery {
			body, err := json.Marshal(map[string]string{"sql": q})
			if err != nil {
				t.Fatal(err)
			}
			code, b := send(t, http.MethodPost, c.srv.URL+"/v1/api/query", body, func(r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+cr.secret)
				r.Header.Set("Content-Type", "application/json")
			})
			switch {
			case code == http.StatusOK && !cr.refused:
				answered++
			case code == http.StatusForbidden && cr.refused:
			case (code == http.StatusBadRequest || code == http.StatusForbidden) && !cr.refused:
			default:
				t.Errorf("%s: %s = %d %s", cr.kind, q, code, b)
				continue
			}
			if code != http.StatusOK && !strings.Contains(string(b), `"hint"`) {
				t.Errorf("%s: %s refused without a hint: %s", cr.kind, q, b)
			}
			if strings.Contains(string(b), foreign.ws) || strings.Contains(string(b), foreign.env) {
				t.Errorf("%s of %s sees the other tenant: %s = %s", cr.kind, own.ws, q, b)
			}
		}
		// The matrix can fail: the views answer, and with the credential's
		// own rows.
		if !cr.refused {
			_, b := send(t, http.MethodPost, c.srv.URL+"/v1/api/query", []byte(`{"sql":"SELECT state FROM resources"}`), func(r *http.Request) {
				r.Header.Set("Authorization", "Bearer "+cr.secret)
			})
			if answered < len(tenancy.TenantQueryRelations) || !strings.Contains(string(b), own.ws) {
				t.Errorf("%s: %d statements answered; its resources: %s", cr.kind, answered, b)
			}
		}
	}
}

// TestQueryConcurrencyCLI: one tenant's endless kl query runs starve no
// one. With two of one read token's kl query running (the most kld lets a
// credential run at once), the token's next kl query fails at once, exit
// 5, saying so and when to retry; another tenant's kl query and the same
// tenant's other token still answer; once the endless ones are stopped,
// the token queries again. Both stores.
func TestQueryConcurrencyCLI(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		other := startChecklistOn(t, c.srv, "globex")
		hog := c.automation(t, "read").Secret
		const endless = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n`

		// Each endless query runs again whenever it ends: on a loaded
		// machine one may start after this test's SELECT 1 and be the one
		// refused (429) while the SELECT runs; run again, it finds only
		// the other endless one running.
		ctx, stop := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		klBin := tofu.BuildKL(t)
		for range 2 {
			wg.Go(func() {
				for ctx.Err() == nil {
					cmd := exec.CommandContext(ctx, klBin, "--server", c.srv.URL, "--token", hog, "query", endless)
					cmd.Env = append(tofu.CleanEnv("KL_"), "NO_COLOR=1")
					if err := cmd.Run(); err != nil && ctx.Err() == nil {
						time.Sleep(100 * time.Millisecond)
					}
				}
			})
		}
		stopHogs := func() {
			stop()
			wg.Wait()
		}
		defer stopHogs()

		// The token's third query is refused once both run.
		deadline := time.Now().Add(time.Minute)
		for {
			_, errOut, code := kl(t, "--server", c.srv.URL, "--token", hog, "query", "SELECT 1")
			if code != 0 {
				if code != 5 || !strings.Contains(errOut, "already runs 2 queries at once") || !strings.Contains(errOut, "retry in 5 seconds") {
					t.Fatalf("the token's third kl query: exit %d, want 5 saying the credential runs 2 and when to retry\n%s", code, errOut)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a minute after two endless kl query runs started, the token's third still answers: no limit per credential")
			}
			time.Sleep(200 * time.Millisecond)
		}
		for who, secret := range map[string]string{"another tenant": other.auto.Secret, "the same tenant's other token": c.auto.Secret} {
			start := time.Now()
			if out := mustKL(t, "--server", c.srv.URL, "--token", secret, "query", "SELECT count(*) AS n FROM resources"); !strings.Contains(out, "(1 row)") {
				t.Errorf("%s's kl query beside the endless ones:\n%s", who, out)
			}
			t.Logf("%s's kl query beside the endless ones took %s", who, time.Since(start).Round(time.Millisecond))
		}

		stopHogs()
		deadline = time.Now().Add(time.Minute)
		for {
			_, errOut, code := kl(t, "--server", c.srv.URL, "--token", hog, "query", "SELECT 1")
			if code == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a minute after its endless kl query runs were stopped, the token still may not query: exit %d\n%s", code, errOut)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

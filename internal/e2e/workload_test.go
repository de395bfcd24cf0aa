package e2e_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/oidctest"
	"github.com/kilolock/kilolock/internal/tofu"
)

const workloadAudience = "https://kilolock.example.com"

// TestWorkloadIdentityTofu is issue 32 end to end: a real HTTPS OIDC
// issuer; two kld replicas on one database, one trusting the issuer's CA
// through SSL_CERT_FILE, the other through --trust-issuer-ca-file; the
// operator adds a trust policy with kl on one and the other honours it;
// the real OpenTofu CLI inits, applies and plans with the job's ID token
// as the password (TF_HTTP_PASSWORD); the identity shows as history's
// actor, the lock holder (kl status), in kld's log and the audit log;
// another repository, an expired token, a withdrawn key and a removed
// policy are refused with nothing written; a rotated-in key works.
func TestWorkloadIdentityTofu(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		iss := oidctest.Start(t)
		common := []string{"--auth=token", "--operator-token=" + operatorSecret, "--trust-key-refresh=1s"}
		a := tofu.StartKLDEnv(t, []string{"SSL_CERT_FILE=" + iss.CAFile()}, databaseURL, common...)
		b := tofu.StartKLD(t, databaseURL, append(common, "--trust-issuer-ca-file="+iss.CAFile())...)
		asOp := func(srv *tofu.Server, args ...string) string {
			return mustKL(t, append([]string{"--server", srv.URL, "--token", operatorSecret}, args...)...)
		}

		var ws struct{ ID string }
		operator(t, a, "POST", "/v1/api/workspaces", `{"name":"acme","kind":"organization"}`, 201, &ws)
		var env struct {
			PublicID string `json:"public_id"`
		}
		operator(t, a, "POST", "/v1/api/workspaces/"+ws.ID+"/environments", `{"slug":"prod"}`, 201, &env)
		out := asOp(a, "trust", "add", "--env", env.PublicID, "--issuer", iss.URL, "--audience", workloadAudience,
			"--claim", "repository=org/app", "--claim-glob", "ref=refs/heads/*", "--scope", "read-write", "--state", "app-*")
		policy := regexp.MustCompile(`^trs_[0-9a-f]{16}`).FindString(out)
		if policy == "" {
			t.Fatalf("kl trust add printed no policy id:\n%s", out)
		}
		if list := asOp(b, "trust", "list"); !strings.Contains(list, policy) {
			t.Fatalf("replica b does not list the policy added through a:\n%s", list)
		}

		job := func(k *oidctest.Key, edit func(map[string]any)) string {
			c := iss.GitHubClaims(workloadAudience, "org/app", "refs/heads/main")
			if edit != nil {
				edit(c)
			}
			return iss.Sign(t, k, c)
		}
		workdir := func(srv *tofu.Server, token, rev string) *tofu.Workdir {
			wd := tofu.NewWorkdir(t, srv.Backend(ws.ID+"/"+env.PublicID+"/app-prod")+smallConfig(rev))
			wd.Setenv("TF_HTTP_USERNAME", ws.ID)
			wd.Setenv("TF_HTTP_PASSWORD", token)
			return wd
		}
		name := ws.ID + "." + env.PublicID + ".app-prod"
		versions := func() []struct{ Actor string } {
			var h struct {
				Versions []struct{ Actor string } `json:"versions"`
			}
			if err := json.Unmarshal([]byte(asOp(a, "history", name, "--json")), &h); err != nil {
				t.Fatal(err)
			}
			return h.Versions
		}
		wantID := policy + " sub:repo:org/app:ref:refs/heads/main repository:org/app ref:refs/heads/main run:7311"

		// init, apply and plan with an RS256 token on a, a plan with an
		// ES256 token on b.
		token := job(iss.Key("RS256"), nil)
		ci := workdir(a, token, "v1")
		ci.Must("init", "-no-color")
		if out := ci.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete!") {
			t.Fatalf("apply with the ID token:\n%s", out)
		}
		if out := ci.Must("plan", "-no-color"); !strings.Contains(out, "No changes") {
			t.Errorf("plan with the ID token:\n%s", out)
		}
		onB := workdir(b, job(iss.Key("ES256"), nil), "v1")
		onB.Must("init", "-no-color")
		if out := onB.Must("plan", "-no-color"); !strings.Contains(out, "No changes") {
			t.Errorf("plan through replica b with an ES256 token:\n%s", out)
		}
		h := versions()
		if len(h) != 1 || h[0].Actor != wantID {
			t.Errorf("history = %+v, want one version by %q", h, wantID)
		}
		if !a.WaitLog(t.Context(), "sub:repo:org/app", 5*time.Second) {
			t.Error("kld's log does not name the job's identity")
		}

		// The lock holder, as kl status shows it.
		lockBody := `{"ID":"c0ffee00-2222-3333-4444-555555555555","Operation":"OperationTypeApply","Who":"runner@fv-az123","Version":"1.8.0","Created":"2026-12-04T00:00:00Z","Path":""}`
		withToken := func(tok string) func(*http.Request) {
			return func(r *http.Request) { r.SetBasicAuth(ws.ID, tok) }
		}
		if code, body := send(t, "LOCK", a.URL+"/v1/states/"+ws.ID+"/"+env.PublicID+"/app-prod", []byte(lockBody), withToken(token)); code != 200 {
			t.Fatalf("LOCK with the ID token: %d %s", code, body)
		}
		if st := asOp(b, "status", name); !strings.Contains(st, "sub:repo:org/app:ref:refs/heads/main") {
			t.Errorf("kl status does not show the identity as holder:\n%s", st)
		}
		if code, body := send(t, "UNLOCK", a.URL+"/v1/states/"+ws.ID+"/"+env.PublicID+"/app-prod", []byte(lockBody), withToken(token)); code != 200 {
			t.Fatalf("UNLOCK with the ID token: %d %s", code, body)
		}

		// kl --token <ID token>.
		if who := mustKL(t, "--server", b.URL, "--token", token, "whoami"); !strings.Contains(who, wantID) || !strings.Contains(who, env.PublicID) {
			t.Errorf("kl whoami with the ID token:\n%s", who)
		}

		// Refusals, each with nothing written: apply a change with
		// another repository's token, then with an expired one.
		refused := func(tok, code string) {
			t.Helper()
			wd := workdir(a, tok, "v2")
			if _, stderr, exit := wd.Run("init", "-no-color"); exit == 0 {
				if _, stderr, exit = wd.Run("apply", "-auto-approve", "-no-color"); exit == 0 {
					t.Fatalf("apply with a token to refuse (%s) succeeded", code)
				}
				_ = stderr
			}
			if !a.WaitLog(t.Context(), code, 5*time.Second) {
				t.Errorf("kld did not log %s", code)
			}
			if h := versions(); len(h) != 1 {
				t.Errorf("after a refused apply (%s): %d versions, want 1", code, len(h))
			}
		}
		refused(job(iss.Key("RS256"), func(c map[string]any) { c["repository"] = "org/other" }), "trust_mismatch")
		refused(job(iss.Key("RS256"), func(c map[string]any) {
			c["iat"], c["exp"] = time.Now().Add(-30*time.Minute).Unix(), time.Now().Add(-20*time.Minute).Unix()
		}), "credentials_expired")

		// Rotation: a token of the new key works; once the old key is
		// withdrawn and the cache refreshed (1 s here), its tokens do not.
		time.Sleep(1100 * time.Millisecond)
		old := iss.Key("RS256")
		next := iss.AddKey(t, "RS256")
		rotated := workdir(a, job(next, nil), "v1")
		rotated.Must("init", "-no-color")
		if out := rotated.Must("plan", "-no-color"); !strings.Contains(out, "No changes") {
			t.Errorf("plan with a token of the rotated-in key:\n%s", out)
		}
		iss.Withdraw(old)
		time.Sleep(2 * time.Second)
		stale := workdir(a, job(old, nil), "v1")
		if _, _, code := stale.Run("init", "-no-color"); code == 0 {
			if _, _, code := stale.Run("plan", "-no-color"); code == 0 {
				t.Error("plan with a token of the withdrawn key succeeded")
			}
		}
		if !a.WaitLog(t.Context(), "check=signature", 5*time.Second) {
			t.Errorf("kld did not log the withdrawn key's token as refused by its signature:\n%s", a.Log())
		}

		// The policy removed through b: the next request through a is 401.
		asOp(b, "trust", "remove", policy)
		if _, _, code := rotated.Run("plan", "-no-color"); code == 0 {
			t.Error("plan after the policy's removal succeeded")
		}
		if code, body := send(t, "GET", a.URL+"/v1/states/"+ws.ID+"/"+env.PublicID+"/app-prod", nil, withToken(job(next, nil))); code != http.StatusUnauthorized ||
			!strings.Contains(string(body), "credentials_invalid") {
			t.Errorf("GET after the policy's removal: %d %s, want 401 credentials_invalid", code, body)
		}
		if h := versions(); len(h) != 1 {
			t.Errorf("%d versions at the end, want 1", len(h))
		}

		audit := asOp(a, "audit", "--limit", "1000")
		for _, want := range []string{"trust.add", "trust.remove", "trust_mismatch", "credentials_expired"} {
			if !strings.Contains(audit, want) {
				t.Errorf("kl audit does not show %s:\n%s", want, audit)
			}
		}
		for _, srv := range []*tofu.Server{a, b} {
			if strings.Contains(srv.Log(), token) || strings.Contains(srv.Log(), ".eyJ") {
				t.Error("kld's log holds an ID token")
			}
		}
	})
}

// TestWorkloadTokenExpiresMidApply: a real OpenTofu apply that outlives
// its job's ID token (GitHub's live about 5 minutes) still saves its state
// and releases its lock: the expired token finishes the run whose lock it
// took, and nothing else.
func TestWorkloadTokenExpiresMidApply(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		iss := oidctest.Start(t)
		srv := tofu.StartKLDEnv(t, []string{"SSL_CERT_FILE=" + iss.CAFile()}, databaseURL, "--auth=token", "--operator-token="+operatorSecret)
		var ws struct{ ID string }
		operator(t, srv, "POST", "/v1/api/workspaces", `{"name":"acme","kind":"organization"}`, 201, &ws)
		var env struct {
			PublicID string `json:"public_id"`
		}
		operator(t, srv, "POST", "/v1/api/workspaces/"+ws.ID+"/environments", `{"slug":"prod"}`, 201, &env)
		mustKL(t, "--server", srv.URL, "--token", operatorSecret, "trust", "add", "--env", env.PublicID, "--issuer", iss.URL,
			"--audience", workloadAudience, "--claim", "repository=org/app", "--scope", "read-write")

		// Accepted for about 15 s more (exp 45 s ago, 60 s of skew); the
		// apply sleeps 25 s before it saves its state.
		c := iss.GitHubClaims(workloadAudience, "org/app", "refs/heads/main")
		now := time.Now()
		c["iat"], c["nbf"], c["exp"] = now.Add(-60*time.Second).Unix(), now.Add(-60*time.Second).Unix(), now.Add(-45*time.Second).Unix()
		token := iss.Sign(t, iss.Key("RS256"), c)
		wd := tofu.NewWorkdir(t, srv.Backend(ws.ID+"/"+env.PublicID+"/slow")+`
resource "terraform_data" "slow" {
  input = "v1"
  provisioner "local-exec" {
    command = "sleep 25"
  }
}
`)
		wd.Setenv("TF_HTTP_USERNAME", ws.ID)
		wd.Setenv("TF_HTTP_PASSWORD", token)
		wd.Must("init", "-no-color")
		if out := wd.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete!") {
			t.Fatalf("apply outliving its token:\n%s", out)
		}
		if !srv.WaitLog(t.Context(), "expired ID token finishing the run", 5*time.Second) {
			t.Error("kld did not log the expired token finishing its run")
		}
		// Its state saved and its lock released; the token reaches nothing
		// more.
		status := mustKL(t, "--server", srv.URL, "--token", operatorSecret, "status", ws.ID+"."+env.PublicID+".slow", "--json")
		var st struct {
			Serial uint64            `json:"serial"`
			Locks  []json.RawMessage `json:"locks"`
		}
		if err := json.Unmarshal([]byte(status), &st); err != nil || st.Serial == 0 || len(st.Locks) != 0 {
			t.Errorf("after the apply: %s (%v), want a saved state and no lock", status, err)
		}
		if _, _, code := wd.Run("plan", "-no-color"); code == 0 {
			t.Error("plan with the expired token succeeded")
		}
	})
}

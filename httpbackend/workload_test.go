package httpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/oidctest"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store/postgres"
	"github.com/kilolock/kilolock/store/sqlite"
	"github.com/kilolock/kilolock/tenancy/trust"
)

const workloadAudience = "https://kilolock.example.com"

// keyRefresh is how old the test verifier lets an issuer's keys get: short,
// so that a withdrawn key stops verifying within the test.
const keyRefresh = 300 * time.Millisecond

// workloadStores open a store of each kind and, for the second replica, a
// second store on the same database.
var workloadStores = []struct {
	name string
	open func(t testing.TB) (first, second kilolock.Store)
}{
	{"sqlite", func(t testing.TB) (kilolock.Store, kilolock.Store) {
		path := filepath.Join(t.TempDir(), "kl.db")
		return openStore(t, func() (kilolock.Store, error) { return sqlite.Open(context.Background(), path) }),
			openStore(t, func() (kilolock.Store, error) { return sqlite.Open(context.Background(), path) })
	}},
	{"postgres", func(t testing.TB) (kilolock.Store, kilolock.Store) {
		url := testpg.URL(t)
		return openStore(t, func() (kilolock.Store, error) { return postgres.Open(context.Background(), url) }),
			openStore(t, func() (kilolock.Store, error) { return postgres.Open(context.Background(), url) })
	}},
}

func openStore(t testing.TB, open func() (kilolock.Store, error)) kilolock.Store {
	t.Helper()
	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// workloadFixture is a real HTTPS issuer, two handlers (replicas) on one
// database, each with a verifier trusting the issuer's CA from its file,
// and a workspace with one environment.
type workloadFixture struct {
	iss        *oidctest.Issuer
	a, b       *testEnv
	tenant     *tenantFixture
	ws, envID  string
	verifierOf func() *trust.Verifier
}

func newWorkloadFixture(t testing.TB, first, second kilolock.Store) *workloadFixture {
	iss := oidctest.Start(t)
	verifier := func() *trust.Verifier {
		client, err := trust.NewHTTPClient(iss.CAFile())
		mustDo(t, err)
		v, err := trust.NewVerifier(trust.Options{HTTPClient: client, RefreshEvery: keyRefresh})
		mustDo(t, err)
		return v
	}
	a := newEnvOn(t, first, Options{Auth: AuthToken, OperatorToken: operatorSecret, Trust: verifier()})
	b := newEnvOn(t, second, Options{Auth: AuthToken, OperatorToken: operatorSecret, Trust: verifier()})
	f := seedTenant(t, first.(tenancy.TenantStore), "acme", "prod")
	return &workloadFixture{iss: iss, a: a, b: b, tenant: f, ws: f.ws.ID, envID: f.envs[0].PublicID, verifierOf: verifier}
}

// addPolicy adds a policy through env's control API as the operator and
// returns its id.
func (f *workloadFixture) addPolicy(t testing.TB, env *testEnv, body map[string]any) string {
	t.Helper()
	w := env.do("POST", "/v1/api/trust-policies", mustJSON(t, body), bearer(operatorSecret)...)
	if w.Code != http.StatusCreated {
		t.Fatalf("add a trust policy: %d %s", w.Code, w.Body)
	}
	var p trust.Policy
	mustDo(t, json.Unmarshal(w.Body.Bytes(), &p))
	if !strings.HasPrefix(p.ID, "trs_") {
		t.Fatalf("policy id %q: want trs_…", p.ID)
	}
	return p.ID
}

func (f *workloadFixture) policyBody(scope string) map[string]any {
	return map[string]any{"environment_id": f.envID, "issuer": f.iss.URL, "audience": workloadAudience,
		"claims": map[string]string{"repository": "org/app"}, "claim_globs": map[string]string{"ref": "refs/heads/*"},
		"scope": scope, "state_pattern": "app-*"}
}

// token mints a token of org/app's main branch, signed by k, edited.
func (f *workloadFixture) token(t testing.TB, k *oidctest.Key, edit func(map[string]any)) string {
	c := f.iss.GitHubClaims(workloadAudience, "org/app", "refs/heads/main")
	if edit != nil {
		edit(c)
	}
	return f.iss.Sign(t, k, c)
}

func (f *workloadFixture) path(state string) string {
	return "/v1/states/" + f.ws + "/" + f.envID + "/" + state
}

// refusedWrite tries, with the credential header, to lock and write the
// state named state and asserts each is refused with status and code, and
// that nothing was written: the state does not exist afterwards (or, when
// it did, still has the serial it had).
func (f *workloadFixture) refusedWrite(t *testing.T, env *testEnv, state string, header []string, status int, code string) errorBody {
	t.Helper()
	name, _ := tenancy.TenantStateName(f.ws, f.envID, state)
	before, beforeErr := env.engine.Status(context.Background(), name)
	li := lockInfo("11111111-2222-3333-4444-555555555555", "runner@ci")
	w := env.do("LOCK", f.path(state), mustJSON(t, li), header...)
	if w.Code != status {
		t.Fatalf("LOCK %s: %d %s, want %d %s", state, w.Code, w.Body, status, code)
	}
	body := errorOf(t, w)
	if body.Error != code {
		t.Errorf("LOCK %s: error %q (%s), want %q", state, body.Error, body.Message, code)
	}
	doc := stateDoc(t, "lineage-refused", 7, map[string]string{"x": "refused"})
	if w := env.do("POST", f.path(state), doc, append(append([]string{}, header...), "Content-MD5", md5Of(doc))...); w.Code != status || errorOf(t, w).Error != code {
		t.Errorf("POST %s: %d %s, want %d %s", state, w.Code, w.Body, status, code)
	}
	after, afterErr := env.engine.Status(context.Background(), name)
	switch {
	case errors.Is(beforeErr, kilolock.ErrNotFound) && !errors.Is(afterErr, kilolock.ErrNotFound):
		t.Errorf("state %s exists after refused requests: %+v, %v", state, after, afterErr)
	case beforeErr == nil && (afterErr != nil || after.Serial != before.Serial || len(after.Locks) != len(before.Locks)):
		t.Errorf("state %s changed by refused requests: serial %d -> %v (%v), locks %d", state, before.Serial, after, afterErr, len(before.Locks))
	}
	return body
}

// TestWorkloadIdentity is issue 32's checklist on the handler, over each
// store, against a real HTTPS issuer whose CA the verifier is given as a
// file: a trust policy added by the operator lets a CI job's ID token lock
// and write (as the basic-auth password or a Bearer token), naming its
// identity as holder and actor; refused tokens write nothing; rotation
// works, a withdrawn key and a removed policy stop working; a second
// replica on the same database shares the policies.
func TestWorkloadIdentity(t *testing.T) {
	for _, st := range workloadStores {
		t.Run(st.name, func(t *testing.T) {
			first, second := st.open(t)
			f := newWorkloadFixture(t, first, second)
			ctx := context.Background()
			rsa, es := f.iss.Key("RS256"), f.iss.Key("ES256")
			policy := f.addPolicy(t, f.a, f.policyBody("read-write"))

			// Before any trust: an ID token of a policy-less environment.
			good := f.token(t, rsa, nil)
			name, _ := tenancy.TenantStateName(f.ws, f.envID, "app-prod")

			// Lock, write, read and unlock as tofu does, with the token as
			// the basic-auth password, on replica a.
			li := lockInfo("aaaaaaaa-2222-3333-4444-555555555555", "runner@fv-az123")
			if w := f.a.do("LOCK", f.path("app-prod"), mustJSON(t, li), basic(f.ws, good)...); w.Code != http.StatusOK {
				t.Fatalf("LOCK with the ID token: %d %s", w.Code, w.Body)
			}
			status, err := f.a.engine.Status(ctx, name)
			mustDo(t, err)
			wantID := policy + " sub:repo:org/app:ref:refs/heads/main repository:org/app ref:refs/heads/main run:7311"
			if len(status.Locks) != 1 || status.Locks[0].Info.Who != wantID {
				t.Errorf("lock holder = %+v, want Who %q", status.Locks, wantID)
			}
			doc := stateDoc(t, "lineage-w", 1, map[string]string{"a": "1"})
			if w := f.a.do("POST", f.path("app-prod")+"?ID="+li.ID, doc, append(basic(f.ws, good), "Content-MD5", md5Of(doc))...); w.Code != http.StatusOK {
				t.Fatalf("POST with the ID token: %d %s", w.Code, w.Body)
			}
			if w := f.a.do("UNLOCK", f.path("app-prod"), mustJSON(t, li), basic(f.ws, good)...); w.Code != http.StatusOK {
				t.Fatalf("UNLOCK with the ID token: %d %s", w.Code, w.Body)
			}
			h, err := f.a.engine.History(ctx, name, kilolock.HistoryOptions{})
			mustDo(t, err)
			if len(h) != 1 || h[0].Actor != wantID {
				t.Errorf("history = %+v, want one version by %q", h, wantID)
			}
			// ES256, as a Bearer token, on replica b: it shares the policy.
			if w := f.b.do("GET", f.path("app-prod"), nil, bearer(f.token(t, es, nil))...); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "lineage-w") {
				t.Errorf("GET on replica b with an ES256 Bearer token: %d %s", w.Code, w.Body)
			}
			// kl whoami --token <ID token>: the identity and where it reaches.
			w := f.b.do("GET", "/v1/whoami", nil, bearer(good)...)
			var reach tenancy.Reach
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &reach) != nil || reach.Token.ID != wantID ||
				len(reach.Environments) != 1 || reach.Environments[0].PublicID != f.envID || !reach.Environments[0].Writable {
				t.Errorf("whoami with the ID token: %d %s, want %s writing %s", w.Code, w.Body, wantID, f.envID)
			}
			w = f.b.do("GET", "/v1/whoami", nil, bearer(f.token(t, es, func(c map[string]any) { c["repository"] = "org/other" }))...)
			if w.Code != http.StatusForbidden || errorOf(t, w).Error != "trust_mismatch" {
				t.Errorf("whoami with another repository's token: %d %s, want 403 trust_mismatch", w.Code, w.Body)
			}
			if !strings.Contains(f.a.logs.String(), "actor=\""+wantID+"\"") && !strings.Contains(f.a.logs.String(), "actor="+wantID) {
				t.Errorf("kld's log does not name the identity %q as actor", wantID)
			}
			fetches := f.iss.Fetches()
			for range 20 {
				f.a.do("GET", f.path("app-prod"), nil, basic(f.ws, good)...)
			}
			if n := f.iss.Fetches() - fetches; n > 2 {
				t.Errorf("20 requests within the key refresh made %d fetches of the issuer: want none per request", n)
			}

			// Refusals, each writing nothing.
			t.Run("refusals", func(t *testing.T) {
				for _, state := range []string{"app-new", "app-prod"} {
					b := f.refusedWrite(t, f.a, state, basic(f.ws, f.token(t, rsa, func(c map[string]any) { c["repository"] = "org/other" })), http.StatusForbidden, "trust_mismatch")
					if !strings.Contains(b.Message, "repository") || !strings.Contains(b.Message, "org/other") || strings.Contains(b.Message, "org/app") {
						t.Errorf("trust mismatch message %q: want the claim and the token's own value, not the policy's", b.Message)
					}
					b = f.refusedWrite(t, f.a, state, basic(f.ws, f.token(t, rsa, func(c map[string]any) {
						c["iat"], c["exp"] = time.Now().Add(-20*time.Minute).Unix(), time.Now().Add(-10*time.Minute).Unix()
					})), http.StatusUnauthorized, "credentials_expired")
					if !strings.Contains(b.Message, "expired") {
						t.Errorf("expired: message %q", b.Message)
					}
					b = f.refusedWrite(t, f.a, state, basic(f.ws, f.token(t, rsa, func(c map[string]any) { c["aud"] = "https://elsewhere.example.com" })), http.StatusUnauthorized, "credentials_invalid")
					if !strings.Contains(b.Message, "audience") {
						t.Errorf("other audience: message %q, want it to name the audience", b.Message)
					}
					b = f.refusedWrite(t, f.a, state, basic(f.ws, oidctest.Unsigned(t, f.iss.GitHubClaims(workloadAudience, "org/app", "refs/heads/main"))), http.StatusUnauthorized, "credentials_invalid")
					if !strings.Contains(b.Message, "none") {
						t.Errorf("alg none: message %q, want it to name the algorithm", b.Message)
					}
					f.refusedWrite(t, f.a, state, basic(f.ws, oidctest.SignHMAC(t, rsa.ID, rsa.PublicKeyDER(t), f.iss.GitHubClaims(workloadAudience, "org/app", "refs/heads/main"))), http.StatusUnauthorized, "credentials_invalid")
					f.refusedWrite(t, f.a, state, basic("ws_0123456789abcdef", good), http.StatusForbidden, "scope_mismatch")
					f.refusedWrite(t, f.a, state, basic(f.ws, f.token(t, rsa, func(c map[string]any) { c["exp"] = time.Now().Add(3 * time.Hour).Unix() })), http.StatusUnauthorized, "credentials_invalid")
				}
				// A state outside the policy's pattern.
				f.refusedWrite(t, f.a, "db-prod", basic(f.ws, good), http.StatusForbidden, "trust_mismatch")
				// An issuer no policy names is never fetched.
				stranger := oidctest.Start(t)
				tok := stranger.Sign(t, stranger.Key("RS256"), stranger.GitHubClaims(workloadAudience, "org/app", "refs/heads/main"))
				b := f.refusedWrite(t, f.a, "app-prod", basic(f.ws, tok), http.StatusUnauthorized, "credentials_invalid")
				if !strings.Contains(b.Message, "issuer") || stranger.Fetches() != 0 {
					t.Errorf("unknown issuer: %q after %d fetches of it; want the issuer named and none", b.Message, stranger.Fetches())
				}
				if strings.Contains(f.a.logs.String(), good) {
					t.Error("kld's log holds an ID token")
				}
			})

			t.Run("read scope", func(t *testing.T) {
				readEnv := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "staging", WorkspaceID: f.ws}
				mustDo(t, first.(tenancy.TenantStore).CreateEnvironment(ctx, readEnv))
				body := f.policyBody("read")
				body["environment_id"] = readEnv.PublicID
				f.addPolicy(t, f.a, body)
				path := "/v1/states/" + f.ws + "/" + readEnv.PublicID + "/app-x"
				w := f.a.do("LOCK", path, mustJSON(t, lockInfo("bbbbbbbb-2222-3333-4444-555555555555", "ci")), basic(f.ws, good)...)
				if w.Code != http.StatusForbidden || errorOf(t, w).Error != "token_read_only" {
					t.Errorf("apply lock under a read policy: %d %s, want 403 token_read_only", w.Code, w.Body)
				}
			})

			t.Run("rotation", func(t *testing.T) {
				time.Sleep(keyRefresh) // past the rate of fetches on an unknown key id
				next := f.iss.AddKey(t, "RS256")
				if w := f.b.do("GET", f.path("app-prod"), nil, basic(f.ws, f.token(t, next, nil))...); w.Code != http.StatusOK {
					t.Fatalf("GET with a token of the rotated-in key: %d %s", w.Code, w.Body)
				}
				f.iss.Withdraw(rsa)
				stale := f.token(t, rsa, nil)
				time.Sleep(2 * keyRefresh) // the cache refreshes
				b := f.refusedWrite(t, f.b, "app-prod", basic(f.ws, stale), http.StatusUnauthorized, "credentials_invalid")
				if !strings.Contains(b.Message, "key") {
					t.Errorf("withdrawn key: message %q, want it to name the key", b.Message)
				}
				if w := f.a.do("GET", f.path("app-prod"), nil, basic(f.ws, f.token(t, next, nil))...); w.Code != http.StatusOK {
					t.Errorf("GET with the new key after the old one's withdrawal: %d %s", w.Code, w.Body)
				}
			})

			t.Run("policy removed", func(t *testing.T) {
				tok := f.token(t, f.iss.Key("RS256"), nil)
				if w := f.b.do("GET", f.path("app-prod"), nil, basic(f.ws, tok)...); w.Code != http.StatusOK {
					t.Fatalf("GET before the removal: %d %s", w.Code, w.Body)
				}
				if w := f.a.do("DELETE", "/v1/api/trust-policies/"+policy, nil, bearer(operatorSecret)...); w.Code != http.StatusOK {
					t.Fatalf("remove the policy: %d %s", w.Code, w.Body)
				}
				// The very next request, on the other replica.
				f.refusedWrite(t, f.b, "app-prod", basic(f.ws, tok), http.StatusUnauthorized, "credentials_invalid")
				if w := f.a.do("DELETE", "/v1/api/trust-policies/"+policy, nil, bearer(operatorSecret)...); w.Code != http.StatusNotFound {
					t.Errorf("remove it again: %d %s, want 404", w.Code, w.Body)
				}
			})

			t.Run("audit", func(t *testing.T) {
				w := f.a.do("GET", "/v1/api/audit?limit=1000", nil, bearer(operatorSecret)...)
				var entries []kilolock.AuditEntry
				mustDo(t, json.Unmarshal(w.Body.Bytes(), &entries))
				seen := map[string]bool{}
				for _, e := range entries {
					if e.Actor == "operator" && strings.HasPrefix(e.Target, policy) {
						seen[e.Action] = true
					}
				}
				if !seen["trust.add"] || !seen["trust.remove"] {
					t.Errorf("audit log %v: want trust.add and trust.remove by the operator", entries)
				}
				// A denial of a verified token names its identity.
				named := false
				for _, e := range entries {
					named = named || e.Denied && e.Reason == "token_read_only" && strings.HasSuffix(e.Actor, " sub:repo:org/app:ref:refs/heads/main repository:org/app ref:refs/heads/main run:7311")
				}
				if !named {
					t.Errorf("audit log %v: want the read policy's apply lock denied under the job's identity", entries)
				}
			})
		})
	}
}

// TestTrustPolicyControl checks the control API's answers to bad input:
// each a precise 4xx, never a 500, nothing stored.
func TestTrustPolicyControl(t *testing.T) {
	env, ts := newAuthEnv(t)
	f := seedTenant(t, ts, "acme", "prod")
	good := func() map[string]any {
		return map[string]any{"environment_id": f.envs[0].PublicID, "issuer": "https://token.actions.githubusercontent.com",
			"audience": "https://kl.example.com", "claims": map[string]string{"repository": "org/app"}, "scope": "read-write"}
	}
	for _, c := range []struct {
		name   string
		edit   func(map[string]any)
		status int
		code   string
	}{
		{"http issuer", func(b map[string]any) { b["issuer"] = "http://issuer.example.com" }, 400, "invalid_issuer"},
		{"no claim", func(b map[string]any) { delete(b, "claims") }, 400, "invalid_claim"},
		{"only a wildcard", func(b map[string]any) { delete(b, "claims"); b["claim_globs"] = map[string]string{"sub": "*"} }, 400, "invalid_claim"},
		{"aud as a claim", func(b map[string]any) { b["claims"] = map[string]string{"aud": "x"} }, 400, "invalid_claim"},
		{"bad scope", func(b map[string]any) { b["scope"] = "admin" }, 400, "invalid_scope"},
		{"ttl too long", func(b map[string]any) { b["max_ttl"] = "48h" }, 400, "invalid_max_ttl"},
		{"ttl not a duration", func(b map[string]any) { b["max_ttl"] = "soon" }, 400, "invalid_max_ttl"},
		{"missing environment", func(b map[string]any) { b["environment_id"] = "env_0123456789abcdef" }, 404, "environment_not_found"},
		{"an id given", func(b map[string]any) { b["id"] = "trs_0123456789abcdef" }, 400, "invalid_trust_policy"},
		{"unknown field", func(b map[string]any) { b["claim"] = "x" }, 400, "unknown_field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := good()
			c.edit(b)
			w := env.do("POST", "/v1/api/trust-policies", mustJSON(t, b), bearer(operatorSecret)...)
			if w.Code != c.status || errorOf(t, w).Error != c.code {
				t.Errorf("POST: %d %s, want %d %s", w.Code, w.Body, c.status, c.code)
			}
		})
	}
	if w := env.do("POST", "/v1/api/trust-policies", mustJSON(t, good()), bearer(f.auto[0])...); w.Code != http.StatusUnauthorized {
		t.Errorf("an automation token adding a policy: %d %s, want 401", w.Code, w.Body)
	}
	if w := env.do("DELETE", "/v1/api/trust-policies/not%20an%20id", nil, bearer(operatorSecret)...); w.Code != http.StatusBadRequest {
		t.Errorf("remove a malformed id: %d %s, want 400", w.Code, w.Body)
	}
	w := env.do("GET", "/v1/api/trust-policies", nil, bearer(operatorSecret)...)
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("policies after refused adds: %d %s, want []", w.Code, w.Body)
	}
	// An ID token on a server that verifies none.
	tok := fmt.Sprintf("eyJhbGciOiJSUzI1NiJ9.%s.c2ln", "eyJpc3MiOiJodHRwczovL3gifQ")
	if w := env.do("GET", f.path(0, "app"), nil, basic(f.ws.ID, tok)...); w.Code != http.StatusUnauthorized || errorOf(t, w).Error != "credentials_invalid" {
		t.Errorf("an ID token without a verifier: %d %s, want 401 credentials_invalid", w.Code, w.Body)
	}
}

// TestExpiredTokenFinishesItsRun: CI tokens live minutes and an apply may
// take longer, so a token that expires while its job holds the state's
// lock still writes under that lock and releases it (for at most the
// policy's max TTL past its expiry); it may not read, take a lock, or
// write under another holder's lock, and another run's expired token may
// not use the lock.
func TestExpiredTokenFinishesItsRun(t *testing.T) {
	for _, st := range workloadStores {
		t.Run(st.name, func(t *testing.T) {
			first, second := st.open(t)
			f := newWorkloadFixture(t, first, second)
			client, err := trust.NewHTTPClient(f.iss.CAFile())
			mustDo(t, err)
			v, err := trust.NewVerifier(trust.Options{HTTPClient: client, ClockSkew: 10 * time.Millisecond})
			mustDo(t, err)
			env := newEnvOn(t, first, Options{Auth: AuthToken, OperatorToken: operatorSecret, Trust: v})
			f.addPolicy(t, env, f.policyBody("read-write"))
			k := f.iss.Key("ES256")
			life := 1500 * time.Millisecond
			short := func(run string) string {
				return f.token(t, k, func(c map[string]any) {
					now := time.Now()
					c["iat"], c["nbf"], c["exp"], c["run_id"] = now.Unix(), now.Unix(), now.Add(life).Unix(), run
				})
			}
			tok, other := short("1"), short("2")
			li := lockInfo("dddddddd-2222-3333-4444-555555555555", "runner")
			if w := env.do("LOCK", f.path("app-prod"), mustJSON(t, li), basic(f.ws, tok)...); w.Code != http.StatusOK {
				t.Fatalf("LOCK: %d %s", w.Code, w.Body)
			}
			time.Sleep(life + time.Second) // exp is in whole seconds
			for _, c := range []struct {
				name, method, target string
				body                 []byte
				secret               string
			}{
				{"another run's read", "GET", f.path("app-prod"), nil, other},
				{"another lock", "LOCK", f.path("app-prod"), mustJSON(t, lockInfo("eeeeeeee-2222-3333-4444-555555555555", "runner")), tok},
				{"a write under no lock", "POST", f.path("app-prod"), stateDoc(t, "l", 1, map[string]string{"a": "1"}), tok},
				{"a write under another id", "POST", f.path("app-prod") + "?ID=eeeeeeee-2222-3333-4444-555555555555", stateDoc(t, "l", 1, map[string]string{"a": "1"}), tok},
				{"another run's expired token", "POST", f.path("app-prod") + "?ID=" + li.ID, stateDoc(t, "l", 1, map[string]string{"a": "1"}), other},
				{"another run's unlock", "UNLOCK", f.path("app-prod"), mustJSON(t, li), other},
			} {
				header := basic(f.ws, c.secret)
				if c.method == "POST" {
					header = append(header, "Content-MD5", md5Of(c.body))
				}
				if w := env.do(c.method, c.target, c.body, header...); w.Code != http.StatusUnauthorized || errorOf(t, w).Error != "credentials_expired" {
					t.Errorf("%s with an expired token: %d %s, want 401 credentials_expired", c.name, w.Code, w.Body)
				}
			}
			// The CLI reads the state back before it saves it.
			if w := env.do("GET", f.path("app-prod"), nil, basic(f.ws, tok)...); w.Code != http.StatusNotFound || errorOf(t, w).Error != "state_not_found" {
				t.Errorf("the run's read with its expired token: %d %s, want 404 state_not_found (it has no version yet)", w.Code, w.Body)
			}
			doc := stateDoc(t, "l", 1, map[string]string{"a": "1"})
			if w := env.do("POST", f.path("app-prod")+"?ID="+li.ID, doc, append(basic(f.ws, tok), "Content-MD5", md5Of(doc))...); w.Code != http.StatusOK {
				t.Errorf("the run's last write with its expired token: %d %s, want 200", w.Code, w.Body)
			}
			if w := env.do("UNLOCK", f.path("app-prod"), mustJSON(t, li), basic(f.ws, tok)...); w.Code != http.StatusOK {
				t.Errorf("the run's unlock with its expired token: %d %s, want 200", w.Code, w.Body)
			}
			if !strings.Contains(env.logs.String(), "expired ID token finishing the run") {
				t.Error("kld did not log the expired token finishing its run")
			}
			// The lock released, the expired token reaches nothing more.
			if w := env.do("POST", f.path("app-prod")+"?ID="+li.ID, doc, append(basic(f.ws, tok), "Content-MD5", md5Of(doc))...); w.Code != http.StatusUnauthorized {
				t.Errorf("a write after the unlock with the expired token: %d %s, want 401", w.Code, w.Body)
			}
			if w := env.do("GET", f.path("app-prod"), nil, basic(f.ws, tok)...); w.Code != http.StatusUnauthorized {
				t.Errorf("a read after the unlock with the expired token: %d %s, want 401", w.Code, w.Body)
			}
		})
	}
}

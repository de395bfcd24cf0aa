package httpbackend

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// tenantFixture is a workspace with environments, an automation token per
// environment (read-write) and a member's PAT granted to all of them.
type tenantFixture struct {
	ws       *tenancy.Workspace
	envs     []*tenancy.Environment
	auto     []string // secrets, by environment
	autoRead []string // read-scoped secrets, by environment
	autoOut  []string // outputs-scoped secrets, by environment
	pat      string
	patTok   *tenancy.Token
	user     string
}

const operatorSecret = "klo_test-operator"

func newAuthEnv(t testing.TB) (*testEnv, tenancy.TenantStore) {
	t.Helper()
	env := newEnv(t, "", Options{Auth: AuthToken, OperatorToken: operatorSecret})
	return env, env.store.(tenancy.TenantStore)
}

// eachAuthEnv runs test on an AuthToken handler over each store: the lane
// decides on TenantStore.Access, whose SQL each store writes its own way.
func eachAuthEnv(t *testing.T, test func(t *testing.T, env *testEnv, ts tenancy.TenantStore)) {
	eachEnv(t, Options{Auth: AuthToken, OperatorToken: operatorSecret}, func(t *testing.T, env *testEnv) {
		test(t, env, env.store.(tenancy.TenantStore))
	})
}

func seedTenant(t testing.TB, ts tenancy.TenantStore, name string, envSlugs ...string) *tenantFixture {
	t.Helper()
	ctx := context.Background()
	f := &tenantFixture{ws: &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: name, Kind: tenancy.WorkspaceOrganization}, user: name + "-user"}
	mustDo(t, ts.CreateWorkspace(ctx, f.ws))
	mustDo(t, ts.PutMember(ctx, f.ws.ID, tenancy.Member{UserID: f.user, Role: tenancy.RoleMember}))
	issue := func(kind tenancy.TokenKind, fill func(*tenancy.Token)) (*tenancy.Token, string) {
		tok, secret, err := tenancy.NewToken(kind)
		mustDo(t, err)
		fill(tok)
		mustDo(t, ts.CreateToken(ctx, tok))
		return tok, secret
	}
	f.patTok, f.pat = issue(tenancy.TokenPersonal, func(tok *tenancy.Token) { tok.UserID = f.user })
	for _, slug := range envSlugs {
		e := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: slug, WorkspaceID: f.ws.ID}
		mustDo(t, ts.CreateEnvironment(ctx, e))
		f.envs = append(f.envs, e)
		_, rw := issue(tenancy.TokenAutomation, func(tok *tenancy.Token) { tok.EnvironmentID, tok.Scope = e.PublicID, tenancy.ScopeReadWrite })
		_, ro := issue(tenancy.TokenAutomation, func(tok *tenancy.Token) { tok.EnvironmentID, tok.Scope = e.PublicID, tenancy.ScopeRead })
		_, out := issue(tenancy.TokenAutomation, func(tok *tenancy.Token) { tok.EnvironmentID, tok.Scope = e.PublicID, tenancy.ScopeOutputs })
		f.auto, f.autoRead, f.autoOut = append(f.auto, rw), append(f.autoRead, ro), append(f.autoOut, out)
		mustDo(t, ts.PutGrant(ctx, &tenancy.Grant{TokenID: f.patTok.ID, EnvironmentID: e.PublicID}))
	}
	return f
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func basic(user, secret string) []string {
	return []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+secret))}
}

func bearer(secret string) []string { return []string{"Authorization", "Bearer " + secret} }

func (f *tenantFixture) path(env int, state string) string {
	return "/v1/states/" + f.ws.ID + "/" + f.envs[env].PublicID + "/" + state
}

// TestAuthChecklist asserts the status, code and hint of every scenario of
// the authenticated lane's checklist.
func TestAuthChecklist(t *testing.T) { eachAuthEnv(t, testAuthChecklist) }

func testAuthChecklist(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	ctx := context.Background()
	a := seedTenant(t, ts, "acme", "prod", "staging")
	b := seedTenant(t, ts, "globex", "prod")
	doc := stateDoc(t, "lin-acme", 1, map[string]string{"web": "v1"})

	// An ungranted PAT of a member of acme.
	bare, bareSecret, _ := tenancy.NewToken(tenancy.TokenPersonal)
	bare.UserID = a.user
	mustDo(t, ts.CreateToken(ctx, bare))
	// A PAT to revoke, and one whose user leaves.
	gone, goneSecret, _ := tenancy.NewToken(tenancy.TokenPersonal)
	gone.UserID = a.user
	mustDo(t, ts.CreateToken(ctx, gone))
	mustDo(t, ts.PutGrant(ctx, &tenancy.Grant{TokenID: gone.ID, EnvironmentID: a.envs[0].PublicID}))
	mustDo(t, ts.DeleteToken(ctx, gone.ID))
	expired, expiredSecret, _ := tenancy.NewToken(tenancy.TokenAutomation)
	expired.EnvironmentID, expired.Scope, expired.Expires = a.envs[0].PublicID, tenancy.ScopeReadWrite, time.Now().Add(-time.Minute)
	mustDo(t, ts.CreateToken(ctx, expired))
	leaver := seedTenant(t, ts, "leaver", "prod")
	mustDo(t, ts.RemoveMember(ctx, leaver.ws.ID, leaver.user))

	archived, _ := tenancy.TenantStateName(a.ws.ID, a.envs[1].PublicID, "old")
	mustDo(t, ts.SetStateLifecycle(ctx, archived, tenancy.LifecycleArchived))
	suspended := seedTenant(t, ts, "frozen", "prod")
	mustDo(t, ts.SetWorkspaceLifecycle(ctx, suspended.ws.ID, tenancy.LifecycleSuspended))

	tests := []struct {
		name, method, target string
		header               []string
		status               int
		code, hint           string
	}{
		{"automation token writes", "POST", a.path(0, "app"), bearer(a.auto[0]), 200, "", ""},
		{"automation token in basic auth reads", "GET", a.path(0, "app"), basic(a.ws.ID, a.auto[0]), 200, "", ""},
		{"PAT with a grant writes", "POST", a.path(1, "app"), basic(a.ws.ID, a.pat), 200, "", ""},
		{"no credentials", "GET", a.path(0, "app"), nil, 401, "credentials_missing", "TF_HTTP_PASSWORD"},
		{"unknown token", "GET", a.path(0, "app"), bearer("klt_nope"), 401, "credentials_invalid", "new token"},
		{"operator token on a state", "GET", a.path(0, "app"), bearer(operatorSecret), 401, "operator_token_on_state", "kl token issue --env " + a.envs[0].PublicID},
		{"expired token", "GET", a.path(0, "app"), bearer(expiredSecret), 401, "credentials_expired", "new token"},
		{"revoked PAT", "GET", a.path(0, "app"), basic(a.ws.ID, goneSecret), 401, "credentials_invalid", ""},
		{"PAT without a grant", "GET", a.path(0, "app"), basic(a.ws.ID, bareSecret), 403, "grant_missing", a.envs[0].PublicID},
		{"removed member", "GET", leaver.path(0, "app"), basic(leaver.ws.ID, leaver.pat), 403, "membership_missing", "kl member add"},
		{"removed member, slug of a granted env", "GET", "/v1/states/" + leaver.ws.ID + "/prod/app", basic(leaver.ws.ID, leaver.pat), 403, "membership_missing", ""},
		{"non-member, no grant there", "GET", leaver.path(0, "app"), basic(leaver.ws.ID, a.pat), 404, "workspace_not_found", "kl member add"},
		{"wrong workspace id, automation", "GET", "/v1/states/" + b.ws.ID + "/" + a.envs[0].PublicID + "/app", bearer(a.auto[0]), 404, "workspace_not_found", a.path(0, "{state_name}")},
		{"wrong workspace id, PAT", "GET", b.path(0, "app"), basic(b.ws.ID, a.pat), 404, "workspace_not_found", ""},
		{"wrong environment id", "GET", "/v1/states/" + a.ws.ID + "/env_0000/app", bearer(a.auto[0]), 404, "environment_not_found", a.envs[0].PublicID},
		{"env slug, automation", "GET", "/v1/states/" + a.ws.ID + "/prod/app", bearer(a.auto[0]), 404, "environment_not_found", "public id " + a.envs[0].PublicID},
		{"env slug, PAT with access", "GET", "/v1/states/" + a.ws.ID + "/staging/app", basic(a.ws.ID, a.pat), 404, "environment_not_found", "public id " + a.envs[1].PublicID},
		{"env slug, PAT without access", "GET", "/v1/states/" + a.ws.ID + "/prod/app", basic(a.ws.ID, bareSecret), 404, "environment_not_found", "kl whoami"},
		{"other tenant's env under own workspace", "GET", "/v1/states/" + a.ws.ID + "/" + b.envs[0].PublicID + "/app", basic(a.ws.ID, a.pat), 404, "environment_not_found", ""},
		{"username is not the workspace", "GET", a.path(0, "app"), basic(b.ws.ID, a.auto[0]), 403, "scope_mismatch", "TF_HTTP_USERNAME"},
		{"read-only token writes", "POST", a.path(0, "app"), bearer(a.autoRead[0]), 403, "token_read_only", "read-write"},
		{"read-only token locks", "LOCK", a.path(0, "app"), bearer(a.autoRead[0]), 403, "token_read_only", ""},
		{"read-only token takes a plan's read lock", "LOCK plan", a.path(0, "app"), bearer(a.autoRead[0]), 200, "", ""},
		{"read-only token releases it", "UNLOCK", a.path(0, "app"), bearer(a.autoRead[0]), 200, "", ""},
		{"read-only token reads", "GET", a.path(0, "app"), bearer(a.autoRead[0]), 200, "", ""},
		{"read-only token reads the headers", "HEAD", a.path(0, "app"), bearer(a.autoRead[0]), 200, "", ""},
		{"read-only token reads headers of a missing state", "HEAD", a.path(0, "none"), bearer(a.autoRead[0]), 404, "", ""},
		{"outputs token reads the outputs", "GET", a.path(0, "app") + "/outputs", basic(a.ws.ID, a.autoOut[0]), 200, "", ""},
		{"outputs token reads no state", "GET", a.path(0, "app"), basic(a.ws.ID, a.autoOut[0]), 403, "token_outputs_only", a.path(0, "{state_name}") + "/outputs"},
		{"outputs token locks nothing", "LOCK", a.path(0, "app"), bearer(a.autoOut[0]), 403, "token_outputs_only", "terraform_remote_state"},
		{"outputs token takes no plan lock", "LOCK plan", a.path(0, "app"), bearer(a.autoOut[0]), 403, "token_outputs_only", ""},
		{"outputs token writes nothing", "POST", a.path(0, "app"), bearer(a.autoOut[0]), 403, "token_outputs_only", ""},
		{"outputs token, other environment", "GET", a.path(1, "app") + "/outputs", bearer(a.autoOut[0]), 404, "environment_not_found", ""},
		{"read-only token reads the outputs", "GET", a.path(0, "app") + "/outputs", bearer(a.autoRead[0]), 200, "", ""},
		{"PAT reads the outputs", "GET", a.path(1, "app") + "/outputs", basic(a.ws.ID, a.pat), 200, "", ""},
		{"outputs of a state with no version", "GET", a.path(0, "none") + "/outputs", bearer(a.autoOut[0]), 404, "state_not_found", "empty state"},
		{"the outputs address takes no write", "POST", a.path(0, "app") + "/outputs", bearer(a.auto[0]), 405, "method_not_allowed", "GET"},
		{"suspended workspace refuses writes", "POST", suspended.path(0, "app"), bearer(suspended.auto[0]), 403, "workspace_suspended", "resume"},
		{"suspended workspace refuses locks", "LOCK", suspended.path(0, "app"), bearer(suspended.auto[0]), 403, "workspace_suspended", ""},
		{"suspended workspace takes a plan's lock", "LOCK plan", suspended.path(0, "app"), bearer(suspended.auto[0]), 200, "", ""},
		{"suspended workspace releases it", "UNLOCK", suspended.path(0, "app"), bearer(suspended.auto[0]), 200, "", ""},
		{"suspended workspace refuses a DELETE", "DELETE", suspended.path(0, "app"), bearer(suspended.auto[0]), 403, "workspace_suspended", ""},
		{"suspended workspace reads", "GET", suspended.path(0, "app"), bearer(suspended.auto[0]), 404, "state_not_found", ""},
		{"suspended workspace answers HEAD", "HEAD", suspended.path(0, "app"), bearer(suspended.auto[0]), 404, "", ""},
		{"archived state refuses writes", "POST", a.path(1, "old"), basic(a.ws.ID, a.pat), 403, "state_archived", "restore"},
		{"archived state refuses an apply's lock", "LOCK", a.path(1, "old"), basic(a.ws.ID, a.pat), 403, "state_archived", "plans still work"},
		{"archived state takes a plan's lock", "LOCK plan", a.path(1, "old"), basic(a.ws.ID, a.pat), 200, "", ""},
		{"archived state releases it", "UNLOCK", a.path(1, "old"), basic(a.ws.ID, a.pat), 200, "", ""},
		{"archived state reads", "GET", a.path(1, "old"), basic(a.ws.ID, a.pat), 404, "state_not_found", ""},
		{"archived state answers HEAD", "HEAD", a.path(1, "old"), basic(a.ws.ID, a.pat), 404, "", ""},
		{"local lane", "GET", "/v1/states/app", bearer(a.auto[0]), 401, "auth_required", tenantPath},
		{"local lane lock path", "LOCK", "/v1/states/app/lock", nil, 401, "auth_required", tenantPath},
		{"local unlock", "POST", "/v1/state-unlock/app", nil, 401, "auth_required", tenantPath},
		{"API without the operator token", "GET", "/v1/api/states", bearer(a.auto[0]), 401, "credentials_invalid", "operator"},
		{"API with the operator token", "GET", "/v1/api/states", bearer(operatorSecret), 200, "", ""},
		{"health needs nothing", "GET", "/healthz", nil, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			header := tt.header
			if tt.method == "POST" && strings.HasPrefix(tt.target, "/v1/states/") {
				body = doc
				header = append(cloned(header), "Content-MD5", md5Of(doc))
			}
			method := tt.method
			switch tt.method {
			case "LOCK":
				body = mustJSON(t, lockInfo("l1", "ci"))
			case "LOCK plan":
				li := lockInfo("l1", "ci")
				li.Operation = "OperationTypePlan"
				method, body = "LOCK", mustJSON(t, li)
			case "UNLOCK":
				body = mustJSON(t, lockInfo("l1", "ci"))
			}
			w := env.do(method, tt.target, body, header...)
			if w.Code != tt.status {
				t.Fatalf("%s %s = %d %s; want %d", tt.method, tt.target, w.Code, w.Body, tt.status)
			}
			if tt.code == "" {
				return
			}
			var eb errorBody
			if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
				t.Fatalf("body %s: %v", w.Body, err)
			}
			if eb.Error != tt.code || eb.Message == "" || eb.Hint == "" || !strings.Contains(eb.Hint, tt.hint) {
				t.Errorf("body = %+v; want code %q and a hint with %q", eb, tt.code, tt.hint)
			}
			if tt.status == 401 || tt.status == 403 || strings.HasSuffix(tt.code, "_not_found") && tt.code != "state_not_found" {
				if !strings.Contains(env.logs.String(), "reason="+tt.code) {
					t.Errorf("the log does not name the reason %s", tt.code)
				}
			}
		})
	}

	// Every denial is audited, and only denials are listed as such.
	denied, err := ts.Audit(ctx, kilolock.AuditFilter{DeniedOnly: true, Limit: 1000})
	mustDo(t, err)
	want := 0
	for _, tt := range tests {
		if tt.code != "" && tt.code != "state_not_found" && tt.code != "method_not_allowed" {
			want++
		}
	}
	if len(denied) != want {
		t.Errorf("%d denials audited, want %d", len(denied), want)
	}
	for _, e := range denied {
		if !e.Denied || e.Reason == "" || e.RequestID == "" || e.Actor == "" {
			t.Errorf("audit entry %+v lacks a field", e)
		}
	}
	// A PAT-backed request is named so in the log.
	if !strings.Contains(env.logs.String(), "actor=\"pat:"+a.patTok.ID) {
		t.Error("the log does not name the PAT-backed request")
	}
}

func cloned(s []string) []string { return append([]string(nil), s...) }

// TestAuthCrossTenant: 3 workspaces × 2 environments × every kind of
// credential try every path with every method; only their own succeed, and
// no answer carries another tenant's state or ids.
func TestAuthCrossTenant(t *testing.T) { eachAuthEnv(t, testAuthCrossTenant) }

// seedCrossTenant makes three tenants with environments prod and dev and
// a state "main" in each, whose content holds marker(tenant, env).
func seedCrossTenant(t testing.TB, env *testEnv, ts tenancy.TenantStore) ([]*tenantFixture, func(ti, ei int) string) {
	t.Helper()
	var tenants []*tenantFixture
	for i := range 3 {
		tenants = append(tenants, seedTenant(t, ts, fmt.Sprintf("tenant%d", i), "prod", "dev"))
	}
	marker := func(ti, ei int) string { return fmt.Sprintf("secret-t%d-e%d", ti, ei) }
	for ti, f := range tenants {
		for ei := range f.envs {
			doc := stateDoc(t, fmt.Sprintf("lin-%d-%d", ti, ei), 1, map[string]string{"web": marker(ti, ei)})
			if w := env.do("POST", f.path(ei, "main"), doc, append(bearer(f.auto[ei]), "Content-MD5", md5Of(doc))...); w.Code != 200 {
				t.Fatalf("seed %s: %d %s", f.path(ei, "main"), w.Code, w.Body)
			}
		}
	}
	return tenants, marker
}

func testAuthCrossTenant(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, marker := seedCrossTenant(t, env, ts)
	type cred struct {
		tenant      int
		envs        map[int]bool // environments it reaches
		write       bool
		outputsOnly bool
		header      []string
		kind        string
	}
	var creds []cred
	for ti, f := range tenants {
		for ei := range f.envs {
			creds = append(creds,
				cred{ti, map[int]bool{ei: true}, true, false, bearer(f.auto[ei]), "automation bearer"},
				cred{ti, map[int]bool{ei: true}, true, false, basic(f.ws.ID, f.auto[ei]), "automation basic"},
				cred{ti, map[int]bool{ei: true}, false, false, bearer(f.autoRead[ei]), "read token"},
				cred{ti, map[int]bool{ei: true}, false, true, basic(f.ws.ID, f.autoOut[ei]), "outputs token"})
		}
		creds = append(creds, cred{ti, map[int]bool{0: true, 1: true}, true, false, basic(f.ws.ID, f.pat), "PAT"})
	}
	// OUTPUTS is a GET of the state's outputs-only address.
	methods := []string{"GET", "OUTPUTS", "LOCK", "POST", "UNLOCK", "DELETE"}
	for _, c := range creds {
		for ti, f := range tenants {
			for ei := range f.envs {
				own := ti == c.tenant && c.envs[ei]
				for _, m := range methods {
					var body []byte
					header := cloned(c.header)
					switch m {
					case "POST":
						body = stateDoc(t, fmt.Sprintf("lin-%d-%d", ti, ei), 2, map[string]string{"web": marker(ti, ei)})
						header = append(header, "Content-MD5", md5Of(body))
					case "LOCK", "UNLOCK":
						body = mustJSON(t, lockInfo("matrix", "m"))
					}
					if m == "DELETE" {
						continue // checked below, so that the states stay for the others
					}
					target, method := f.path(ei, "main"), m
					switch m {
					case "POST", "UNLOCK":
						target += "?ID=matrix"
					case "OUTPUTS":
						target, method = target+"/outputs", "GET"
					}
					w := env.do(method, target, body, header...)
					allowed := own && (m == "OUTPUTS" || !c.outputsOnly && (m == "GET" || c.write))
					if allowed != (w.Code < 300) {
						t.Errorf("%s (tenant %d) %s %s = %d %s; allowed %v", c.kind, c.tenant, m, f.path(ei, "main"), w.Code, w.Body, allowed)
					}
					if c.outputsOnly && own && m != "OUTPUTS" && errorOf(t, w).Error != "token_outputs_only" {
						t.Errorf("outputs token %s: %d %s; want token_outputs_only", m, w.Code, w.Body)
					}
					if m == "OUTPUTS" && strings.Contains(w.Body.String(), marker(ti, ei)) {
						t.Errorf("the outputs of %s hold its resources: %s", f.path(ei, "main"), w.Body)
					}
					leaks(t, w.Body.String(), c.tenant, c.envs, tenants, marker)
				}
			}
		}
	}
	// DELETE: refused for everyone else, allowed for the owner.
	for _, c := range creds {
		for ti, f := range tenants {
			for ei := range f.envs {
				if ti == c.tenant && c.envs[ei] {
					continue
				}
				if w := env.do("DELETE", f.path(ei, "main"), nil, c.header...); w.Code < 300 {
					t.Errorf("%s (tenant %d) deleted %s", c.kind, c.tenant, f.path(ei, "main"))
				}
			}
		}
	}
	if w := env.do("DELETE", tenants[0].path(0, "main"), nil, bearer(tenants[0].auto[0])...); w.Code != 200 {
		t.Errorf("owner DELETE = %d %s", w.Code, w.Body)
	}
}

// leaks fails the test when body names a state, environment or workspace
// the credential of tenant, reaching envs, may not see.
func leaks(t testing.TB, body string, tenant int, envs map[int]bool, tenants []*tenantFixture, marker func(int, int) string) {
	t.Helper()
	for oti, of := range tenants {
		if oti != tenant && strings.Contains(body, of.ws.ID) {
			t.Errorf("tenant %d sees workspace %s: %s", tenant, of.ws.ID, body)
		}
		for oei, oe := range of.envs {
			if oti == tenant && envs[oei] {
				continue
			}
			if strings.Contains(body, marker(oti, oei)) || strings.Contains(body, oe.PublicID) {
				t.Errorf("tenant %d sees tenant %d environment %d: %s", tenant, oti, oei, body)
			}
		}
	}
}

// TestLocalLaneReservesTenantNames: with auth off, a local name cannot be
// a tenant's internal name.
func TestLocalLaneReservesTenantNames(t *testing.T) {
	env := newEnv(t, "", Options{})
	w := env.do("LOCK", "/v1/states/ws_a1.env_b2.main", mustJSON(t, lockInfo("l", "me")))
	if w.Code != 400 || !strings.Contains(w.Body.String(), "invalid_state_name") {
		t.Errorf("LOCK ws_… in the local lane = %d %s; want 400 invalid_state_name", w.Code, w.Body)
	}
	if w := env.do("GET", "/v1/states/wsa", nil); w.Code != 404 {
		t.Errorf("GET of another name = %d %s", w.Code, w.Body)
	}
}

// TestAnonymousDenialsAuditBounded floods the authenticated lane without
// credentials: every denial is answered and logged, but one host writes at
// most anonymousAuditBurst audit rows a minute, and other hosts and
// identified callers are still audited.
func TestAnonymousDenialsAuditBounded(t *testing.T) {
	env, ts := newAuthEnv(t)
	a := seedTenant(t, ts, "acme", "prod")
	send := func(remote string, header ...string) {
		r := httptest.NewRequest("GET", a.path(0, "app"), nil)
		r.RemoteAddr = remote
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		env.h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized && w.Code != http.StatusForbidden {
			t.Fatalf("status %d %s", w.Code, w.Body)
		}
	}
	const flood = anonymousAuditBurst + 40
	for range flood {
		send("203.0.113.7:40000")
	}
	send("198.51.100.2:5000")
	bare, bareSecret, _ := tenancy.NewToken(tenancy.TokenPersonal)
	bare.UserID = a.user
	mustDo(t, ts.CreateToken(context.Background(), bare))
	for range 3 {
		send("203.0.113.7:40001", basic(a.ws.ID, bareSecret)...) // grant_missing: identified
	}
	rows, err := ts.Audit(context.Background(), kilolock.AuditFilter{DeniedOnly: true, Limit: 1000})
	mustDo(t, err)
	from := map[string]int{}
	for _, e := range rows {
		host, _, _ := strings.Cut(e.From, ":")
		from[host+" "+e.Reason]++
	}
	want := map[string]int{"203.0.113.7 credentials_missing": anonymousAuditBurst, "198.51.100.2 credentials_missing": 1, "203.0.113.7 grant_missing": 3}
	if !maps.Equal(from, want) {
		t.Errorf("audited denials = %v, want %v", from, want)
	}
	if n := strings.Count(env.logs.String(), "reason=credentials_missing"); n != flood+1 {
		t.Errorf("logged %d credentials_missing denials, want %d", n, flood+1)
	}
	if n := strings.Count(env.logs.String(), "audited=false"); n != flood-anonymousAuditBurst {
		t.Errorf("logged %d unaudited denials, want %d", n, flood-anonymousAuditBurst)
	}
	metrics := env.do("GET", "/metrics", nil).Body.String()
	for _, want := range []string{
		fmt.Sprintf(`kl_auth_denials_total{reason="credentials_missing"} %d`, flood+1),
		`kl_auth_denials_total{reason="grant_missing"} 3`,
		fmt.Sprintf("kl_auth_denials_unaudited_total %d", flood-anonymousAuditBurst),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestIdentifiedDenialsAuditBounded floods the authenticated lane with
// writes from a read-only token: every denial is answered 403 and logged,
// but one credential writes at most identifiedAuditBurst audit rows a
// minute; the rest are counted as unaudited, and another credential is
// still audited.
func TestIdentifiedDenialsAuditBounded(t *testing.T) {
	eachAuthEnv(t, testIdentifiedDenialsAuditBounded)
}

func testIdentifiedDenialsAuditBounded(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	a := seedTenant(t, ts, "acme", "prod")
	doc := stateDoc(t, "lin", 1, map[string]string{"web": "v1"})
	post := func(f *tenantFixture, secret string) {
		t.Helper()
		if w := env.do("POST", f.path(0, "app"), doc, bearer(secret)...); w.Code != http.StatusForbidden {
			t.Fatalf("POST with a read-only token = %d %s", w.Code, w.Body)
		}
	}
	const flood = identifiedAuditBurst + 40
	for range flood {
		post(a, a.autoRead[0])
	}
	other := seedTenant(t, ts, "globex", "prod")
	for range 3 {
		post(other, other.autoRead[0])
	}
	rows, err := ts.Audit(context.Background(), kilolock.AuditFilter{DeniedOnly: true, Limit: 1000})
	mustDo(t, err)
	byActor := map[string]int{}
	for _, e := range rows {
		byActor[e.Actor]++
	}
	actor := func(secret string) string {
		tok, err := ts.TokenByHash(context.Background(), tenancy.HashSecret(secret))
		mustDo(t, err)
		return tok.ID
	}
	if want := map[string]int{actor(a.autoRead[0]): identifiedAuditBurst, actor(other.autoRead[0]): 3}; !maps.Equal(byActor, want) {
		t.Errorf("audited denials by actor = %v, want %v", byActor, want)
	}
	if n := strings.Count(env.logs.String(), "reason=token_read_only"); n != flood+3 {
		t.Errorf("logged %d token_read_only denials, want %d", n, flood+3)
	}
	metrics := env.do("GET", "/metrics", nil, bearer(operatorSecret)...).Body.String()
	for _, want := range []string{
		fmt.Sprintf(`kl_auth_denials_total{reason="token_read_only"} %d`, flood+3),
		fmt.Sprintf("kl_auth_denials_unaudited_total %d", flood-identifiedAuditBurst),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestAuthStoreDown: when the database cannot answer, the lane says 503
// with Retry-After; it is not logged or audited as a denial of the caller.
func TestAuthStoreDown(t *testing.T) { eachAuthEnv(t, testAuthStoreDown) }

func testAuthStoreDown(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	a := seedTenant(t, ts, "acme", "prod")
	if err := env.store.(interface{ Close() error }).Close(); err != nil {
		t.Fatal(err)
	}
	w := env.do("GET", a.path(0, "app"), nil, bearer(a.auto[0])...)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("GET with the database closed = %d (Retry-After %q) %s; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if strings.Contains(env.logs.String(), "request denied") {
		t.Errorf("a database failure was logged as a denial:\n%s", env.logs)
	}
}

// TestWhoamiRoute: GET /v1/whoami answers a token's holder with what it
// reaches, never its secret or hash; a suspended workspace reads as not
// writable, an expired token is answered and marked; an unknown or missing
// token is a logged 401; a server without auth has no tenancy to show.
func TestWhoamiRoute(t *testing.T) {
	env, ts := newAuthEnv(t)
	ctx := context.Background()
	a := seedTenant(t, ts, "acme", "prod")
	get := func(header ...string) (int, tenancy.Reach, string) {
		w := env.do("GET", "/v1/whoami", nil, header...)
		var r tenancy.Reach
		if w.Code == 200 {
			mustDo(t, json.Unmarshal(w.Body.Bytes(), &r))
		}
		return w.Code, r, w.Body.String()
	}
	code, r, body := get(bearer(a.auto[0])...)
	if code != 200 || len(r.Environments) != 1 || !r.Environments[0].Writable || r.Environments[0].Path != a.path(0, "{state_name}") {
		t.Fatalf("whoami (automation) = %d %s", code, body)
	}
	if strings.Contains(body, a.auto[0]) || strings.Contains(body, "hash") {
		t.Errorf("whoami shows the secret or its hash: %s", body)
	}
	mustDo(t, ts.SetWorkspaceLifecycle(ctx, a.ws.ID, tenancy.LifecycleSuspended))
	if code, r, body := get(basic(a.ws.ID, a.pat)...); code != 200 || len(r.Environments) != 1 || r.Environments[0].Writable || r.Token.UserID != a.user {
		t.Errorf("whoami (PAT, suspended workspace) = %d %s", code, body)
	}
	old, oldSecret, _ := tenancy.NewToken(tenancy.TokenAutomation)
	old.EnvironmentID, old.Scope, old.Expires = a.envs[0].PublicID, tenancy.ScopeReadWrite, time.Now().Add(-time.Hour)
	mustDo(t, ts.CreateToken(ctx, old))
	if code, r, body := get(bearer(oldSecret)...); code != 200 || !r.Expired {
		t.Errorf("whoami (expired) = %d %s; want 200 marked expired", code, body)
	}
	if code, _, body := get(bearer("klt_nope")...); code != 401 || !strings.Contains(body, "credentials_invalid") {
		t.Errorf("whoami (unknown token) = %d %s", code, body)
	}
	if code, _, _ := get(); code != 401 {
		t.Errorf("whoami (no token) = %d, want 401", code)
	}
	if !strings.Contains(env.logs.String(), "reason=credentials_invalid") {
		t.Error("the refused whoami was not logged")
	}
	open := newEnv(t, "", Options{})
	if w := open.do("GET", "/v1/whoami", nil, bearer(a.auto[0])...); w.Code != 404 || !strings.Contains(w.Body.String(), "tenancy_disabled") {
		t.Errorf("whoami without auth = %d %s", w.Code, w.Body)
	}
}

// TestControlAPIClosedWithoutOperator: a token-mode server started without
// an operator token says its control API is closed and how to open it,
// whatever credentials come.
func TestControlAPIClosedWithoutOperator(t *testing.T) {
	env := newEnv(t, "", Options{Auth: AuthToken})
	for _, h := range [][]string{nil, bearer("klo_anything")} {
		w := env.do("GET", "/v1/api/workspaces", nil, h...)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "control_api_closed") || !strings.Contains(w.Body.String(), "--operator-token") {
			t.Errorf("GET /v1/api/workspaces = %d %s; want 403 control_api_closed naming --operator-token", w.Code, w.Body)
		}
	}
}

// TestAuthMalformedIDs: a path whose workspace or environment segment no
// store could hold (a NUL byte, 100 KB) is answered like any unknown id,
// never with the database's error.
func TestAuthMalformedIDs(t *testing.T) { eachAuthEnv(t, testAuthMalformedIDs) }

func testAuthMalformedIDs(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	a := seedTenant(t, ts, "acme", "prod")
	huge := strings.Repeat("a", 100<<10)
	for _, tt := range []struct{ name, target, code string }{
		{"NUL in the workspace", "/v1/states/ws_%00/" + a.envs[0].PublicID + "/app", "workspace_not_found"},
		{"NUL in the environment", "/v1/states/" + a.ws.ID + "/env_%00/app", "environment_not_found"},
		{"100 KB workspace", "/v1/states/ws_" + huge + "/" + a.envs[0].PublicID + "/app", "workspace_not_found"},
		{"invalid UTF-8 in the environment", "/v1/states/" + a.ws.ID + "/env_%FF/app", "environment_not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, cred := range [][]string{bearer(a.auto[0]), bearer(a.pat)} {
				w := env.do("GET", tt.target, nil, cred...)
				if e := errorOf(t, w); w.Code != http.StatusNotFound || e.Error != tt.code || len(w.Body.String()) > 2000 {
					t.Errorf("GET %.80s = %d %.300s; want 404 %s", tt.target, w.Code, w.Body, tt.code)
				}
			}
		})
	}
}

// TestReadTokenPlans: a read-scope token runs a plan beside an apply (its
// LOCK is a shared read lock), but can neither take a write lock nor
// release one, not even with an empty force-unlock body; and where a state
// makes plans lock like applies, its plan's LOCK is refused too.
func TestReadTokenPlans(t *testing.T) { eachAuthEnv(t, testReadTokenPlans) }

func testReadTokenPlans(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	a := seedTenant(t, ts, "acme", "prod")
	path := a.path(0, "app")
	apply := lockInfo("apply-1", "alice")
	plan := lockInfo("plan-1", "ci")
	plan.Operation = kilolock.OperationPlan
	status := func(w *httptest.ResponseRecorder) string {
		var eb errorBody
		_ = json.Unmarshal(w.Body.Bytes(), &eb)
		return fmt.Sprint(w.Code, " ", eb.Error)
	}
	if w := env.do("LOCK", path, mustJSON(t, apply), bearer(a.auto[0])...); w.Code != http.StatusOK {
		t.Fatalf("apply's LOCK = %d %s", w.Code, w.Body)
	}
	if w := env.do("LOCK", path, mustJSON(t, plan), bearer(a.autoRead[0])...); w.Code != http.StatusOK {
		t.Fatalf("a read token's plan LOCK beside the apply = %s, want 200", status(w))
	}
	for _, body := range [][]byte{nil, mustJSON(t, kilolock.LockInfo{ID: "apply-1"}), mustJSON(t, apply)} {
		if w := env.do("UNLOCK", path, body, bearer(a.autoRead[0])...); status(w) != "403 token_read_only" {
			t.Errorf("a read token's UNLOCK %s of the writer = %s, want 403 token_read_only", body, status(w))
		}
	}
	name, err := tenancy.TenantStateName(a.ws.ID, a.envs[0].PublicID, "app")
	mustDo(t, err)
	st, err := env.engine.Store().State(context.Background(), name)
	mustDo(t, err)
	if len(st.Locks) != 2 || st.Locks[0].Info.ID != "apply-1" || st.Locks[0].Shared || !st.Locks[1].Shared {
		t.Fatalf("locks after the refused unlocks: %+v", st.Locks)
	}
	if w := env.do("UNLOCK", path, mustJSON(t, plan), bearer(a.autoRead[0])...); w.Code != http.StatusOK {
		t.Errorf("a read token's UNLOCK of its own plan lock = %s", status(w))
	}
	if w := env.do("UNLOCK", path, mustJSON(t, apply), bearer(a.auto[0])...); w.Code != http.StatusOK {
		t.Fatalf("apply's UNLOCK = %s", status(w))
	}

	off := false
	mustDo(t, env.engine.SetSharedPlanLocks(context.Background(), name, &off))
	if w := env.do("LOCK", path, mustJSON(t, plan), bearer(a.autoRead[0])...); status(w) != "403 token_read_only" {
		t.Errorf("a read token's plan LOCK where plans lock like applies = %s, want 403 token_read_only", status(w))
	}
}

// TestPlanLockCreatesNothing: a read token's plan on a state that does not
// exist, and any plan in a suspended workspace, locks (200, so tofu plan
// runs) and unlocks without leaving a state behind: a read credential
// creates nothing, a suspended workspace gets nothing new. A read-write
// token's plan in an active workspace still creates the state, as a LOCK
// always has.
func TestPlanLockCreatesNothing(t *testing.T) { eachAuthEnv(t, testPlanLockCreatesNothing) }

func testPlanLockCreatesNothing(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	ctx := context.Background()
	a := seedTenant(t, ts, "acme", "prod")
	frozen := seedTenant(t, ts, "frozen", "prod")
	mustDo(t, ts.SetWorkspaceLifecycle(ctx, frozen.ws.ID, tenancy.LifecycleSuspended))
	plan := lockInfo("plan-1", "ci")
	plan.Operation = kilolock.OperationPlan
	exists := func(f *tenantFixture, state string) bool {
		t.Helper()
		name, err := tenancy.TenantStateName(f.ws.ID, f.envs[0].PublicID, state)
		mustDo(t, err)
		_, err = env.store.State(ctx, name)
		if err != nil && !errors.Is(err, kilolock.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	for _, tc := range []struct {
		name   string
		f      *tenantFixture
		secret string
		create bool
	}{
		{"read token", a, a.autoRead[0], false},
		{"read-write token in a suspended workspace", frozen, frozen.auto[0], false},
		{"read token in a suspended workspace", frozen, frozen.autoRead[0], false},
		{"PAT in a suspended workspace", frozen, frozen.pat, false},
		{"read-write token", a, a.auto[0], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := strings.ReplaceAll(tc.name, " ", "-")
			path := tc.f.path(0, state)
			cred := bearer(tc.secret)
			if tc.f.patTok != nil && tc.secret == tc.f.pat {
				cred = basic(tc.f.ws.ID, tc.secret)
			}
			w := env.do("LOCK", path, mustJSON(t, plan), cred...)
			var l kilolock.Lock
			if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &l) != nil || l.Info.ID != plan.ID {
				t.Fatalf("plan LOCK of a new state = %d %s, want 200 and the lock", w.Code, w.Body)
			}
			if l.Transient == tc.create {
				t.Errorf("plan LOCK answered transient=%v, want %v", l.Transient, !tc.create)
			}
			if got := exists(tc.f, state); got != tc.create {
				t.Errorf("after the plan's LOCK the state exists: %v, want %v", got, tc.create)
			}
			if w := env.do("GET", path, nil, cred...); w.Code != http.StatusNotFound {
				t.Errorf("GET during the plan = %d, want 404 (no state yet)", w.Code)
			}
			if w := env.do("UNLOCK", path, mustJSON(t, plan), cred...); w.Code != http.StatusOK {
				t.Errorf("the plan's UNLOCK = %d %s, want 200", w.Code, w.Body)
			}
			if got := exists(tc.f, state); got != tc.create {
				t.Errorf("after the plan the state exists: %v, want %v", got, tc.create)
			}
		})
	}
	// What a read token may not take creates nothing either.
	if w := env.do("LOCK", a.path(0, "ro-apply"), mustJSON(t, lockInfo("apply-1", "ci")), bearer(a.autoRead[0])...); w.Code != http.StatusForbidden || exists(a, "ro-apply") {
		t.Errorf("a read token's apply LOCK of a new state = %d %s (exists: %v), want 403 and nothing", w.Code, w.Body, exists(a, "ro-apply"))
	}
}

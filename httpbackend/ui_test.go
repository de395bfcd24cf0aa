package httpbackend

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// uiCookie is the web view's token cookie holding secret.
func uiCookie(secret string) []string { return []string{"Cookie", "kl_ui_token=" + secret} }

// html asks for a page as a browser does.
var html = []string{"Accept", "text/html"}

// uiPages are the web view's pages of one state.
func uiPages(name string) []string {
	base := "/ui/states/" + url.PathEscape(name)
	return []string{base, base + "/diff?from=@1&to=@1", base + "/search?text=secret", base + "/instance?address=terraform_data.web", base + "/graph?address=terraform_data.web"}
}

// TestUICrossTenant is TestAuthCrossTenant for the web view: with the token
// in the web view's cookie, a page of a state answers 200 exactly when the
// lane lets the token GET the state, and no page — the states, the live
// page, an error page — names another tenant's workspace, environment or
// state content.
func TestUICrossTenant(t *testing.T) { eachAuthEnv(t, testUICrossTenant) }

func testUICrossTenant(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, marker := seedCrossTenant(t, env, ts)
	internal := func(f *tenantFixture, ei int) string {
		name, err := tenancy.TenantStateName(f.ws.ID, f.envs[ei].PublicID, "main")
		mustDo(t, err)
		return name
	}
	type cred struct {
		tenant int
		envs   map[int]bool
		secret string
		kind   string
	}
	var creds []cred
	for ti, f := range tenants {
		for ei := range f.envs {
			creds = append(creds, cred{ti, map[int]bool{ei: true}, f.auto[ei], "automation"}, cred{ti, map[int]bool{ei: true}, f.autoRead[ei], "read token"})
		}
		creds = append(creds, cred{ti, map[int]bool{0: true, 1: true}, f.pat, "PAT"})
	}
	for _, c := range creds {
		for _, page := range []string{"/ui/", "/ui/live"} {
			w := env.do("GET", page, nil, append(uiCookie(c.secret), html...)...)
			if w.Code != 200 {
				t.Errorf("%s (tenant %d) %s = %d", c.kind, c.tenant, page, w.Code)
			}
			leaks(t, w.Body.String(), c.tenant, c.envs, tenants, marker)
			for ei := range c.envs {
				if name := internal(tenants[c.tenant], ei); page == "/ui/" && !strings.Contains(w.Body.String(), `data-state="`+name+`"`) {
					t.Errorf("%s (tenant %d) does not see its state %s", c.kind, c.tenant, name)
				}
			}
		}
		for ti, f := range tenants {
			for ei := range f.envs {
				own := ti == c.tenant && c.envs[ei]
				for _, page := range uiPages(internal(f, ei)) {
					w := env.do("GET", page, nil, append(uiCookie(c.secret), html...)...)
					if own != (w.Code == 200) {
						t.Errorf("%s (tenant %d) GET %s = %d; allowed %v", c.kind, c.tenant, page, w.Code, own)
					}
					if !own && w.Code != http.StatusNotFound {
						t.Errorf("%s (tenant %d) GET %s = %d, want 404 (which does not tell whether it exists)", c.kind, c.tenant, page, w.Code)
					}
					leaks(t, w.Body.String(), c.tenant, c.envs, tenants, marker)
				}
			}
		}
	}
	// Without a cookie every page sends the browser to the sign-in form.
	for _, page := range append(uiPages(internal(tenants[0], 0)), "/ui/", "/ui/live") {
		w := env.do("GET", page, nil, html...)
		if loc := w.Header().Get("Location"); w.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
			t.Errorf("anonymous GET %s = %d Location %q, want 303 to the sign-in form", page, w.Code, loc)
		}
	}
	// A revoked token is refused on its next page, and the cookie cleared.
	tok, err := ts.TokenByHash(context.Background(), tenancy.HashSecret(tenants[1].auto[0]))
	mustDo(t, err)
	mustDo(t, ts.DeleteToken(context.Background(), tok.ID))
	w := env.do("GET", "/ui/", nil, append(uiCookie(tenants[1].auto[0]), html...)...)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "credentials_invalid") || !strings.Contains(strings.Join(w.Header().Values("Set-Cookie"), "\n"), "kl_ui_token=;") {
		t.Errorf("a revoked token's page = %d %q, Set-Cookie %q", w.Code, w.Header().Get("X-Kilolock-Error"), w.Header().Values("Set-Cookie"))
	}
}

// TestUIDenialsAudited: a page the lane refuses is logged and audited as
// the lane's denials are.
func TestUIDenialsAudited(t *testing.T) {
	env, ts := newAuthEnv(t)
	a, b := seedTenant(t, ts, "a", "prod"), seedTenant(t, ts, "b", "prod")
	other, err := tenancy.TenantStateName(b.ws.ID, b.envs[0].PublicID, "main")
	mustDo(t, err)
	if w := env.do("GET", "/ui/states/"+other, nil, append(uiCookie(a.auto[0]), html...)...); w.Code != http.StatusNotFound {
		t.Fatalf("a's token on b's state = %d", w.Code)
	}
	entries, err := ts.Audit(context.Background(), kilolock.AuditFilter{DeniedOnly: true})
	mustDo(t, err)
	if len(entries) != 1 || entries[0].Reason != "workspace_not_found" || entries[0].Action != "GET ui" || entries[0].Target != "/ui/states/"+other {
		t.Errorf("audit = %+v, want one GET ui denial workspace_not_found", entries)
	}
	if !strings.Contains(env.logs.String(), "request denied") {
		t.Errorf("the denial is not logged:\n%s", env.logs)
	}
}

// TestUILogin: the sign-in form sets the token cookie httpOnly and
// SameSite=Strict only for a token that reaches something, only from the
// form itself (the CSRF token), and sign-out clears it.
func TestUILogin(t *testing.T) {
	env, ts := newAuthEnv(t)
	f := seedTenant(t, ts, "a", "prod")
	const csrf = "0123456789abcdef0123456789abcdef"
	form := func(v url.Values, header ...string) *http.Response {
		t.Helper()
		w := env.do("POST", "/ui/login", []byte(v.Encode()), append([]string{"Content-Type", "application/x-www-form-urlencoded", "Cookie", "kl_ui_csrf=" + csrf}, header...)...)
		return w.Result()
	}
	tokenCookie := func(resp *http.Response) *http.Cookie {
		for _, c := range resp.Cookies() {
			if c.Name == "kl_ui_token" {
				return c
			}
		}
		return nil
	}
	tests := []struct {
		name   string
		form   url.Values
		header []string
		status int
		code   string
	}{
		{"no csrf token", url.Values{"token": {f.auto[0]}}, nil, http.StatusForbidden, "csrf_refused"},
		{"wrong csrf token", url.Values{"token": {f.auto[0]}, "csrf": {strings.Repeat("f", 32)}}, nil, http.StatusForbidden, "csrf_refused"},
		{"cross-site", url.Values{"token": {f.auto[0]}, "csrf": {csrf}}, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "csrf_refused"},
		{"other origin", url.Values{"token": {f.auto[0]}, "csrf": {csrf}}, []string{"Origin", "https://evil.example"}, http.StatusForbidden, "csrf_refused"},
		{"no token", url.Values{"csrf": {csrf}}, nil, http.StatusUnauthorized, "credentials_missing"},
		{"unknown token", url.Values{"token": {"klt_nope"}, "csrf": {csrf}}, nil, http.StatusUnauthorized, "credentials_invalid"},
		{"operator token", url.Values{"token": {operatorSecret}, "csrf": {csrf}}, nil, http.StatusUnauthorized, "credentials_invalid"},
		{"huge token", url.Values{"token": {strings.Repeat("k", 8<<10)}, "csrf": {csrf}}, nil, http.StatusBadRequest, "token_too_long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := form(tt.form, tt.header...)
			if resp.StatusCode != tt.status || resp.Header.Get("X-Kilolock-Error") != tt.code || tokenCookie(resp) != nil {
				t.Errorf("login = %d %q (cookie %v), want %d %s and no cookie", resp.StatusCode, resp.Header.Get("X-Kilolock-Error"), tokenCookie(resp), tt.status, tt.code)
			}
		})
	}
	resp := form(url.Values{"token": {f.auto[0]}, "csrf": {csrf}, "next": {"//evil.example/"}}, "Origin", "http://example.com", "Sec-Fetch-Site", "same-origin")
	c := tokenCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" || c == nil || c.Value != f.auto[0] || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" {
		t.Fatalf("login = %d Location %q cookie %+v", resp.StatusCode, resp.Header.Get("Location"), c)
	}
	out := env.do("POST", "/ui/logout", []byte("csrf="+csrf), "Content-Type", "application/x-www-form-urlencoded", "Cookie", "kl_ui_csrf="+csrf+"; kl_ui_token="+f.auto[0]).Result()
	if c := tokenCookie(out); out.StatusCode != http.StatusSeeOther || c == nil || c.MaxAge >= 0 {
		t.Errorf("logout = %d cookie %+v, want 303 clearing the cookie", out.StatusCode, c)
	}
	if w := env.do("POST", "/ui/logout", nil, "Cookie", "kl_ui_token="+f.auto[0]); w.Code != http.StatusForbidden {
		t.Errorf("logout without the form token = %d, want 403", w.Code)
	}
}

// TestUIBadInput: every mistake in a page's address is a 4xx with the
// API's error body for a client that does not ask for HTML, and an error
// page naming the code for a browser; never a 500.
func TestUIBadInput(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.post("demo", "", stateDoc(t, "lin", 1, map[string]string{"web": "v1"}))
	tests := []struct {
		target string
		status int
		code   string
	}{
		{"/ui/states/nope", http.StatusNotFound, "not_found"},
		{"/ui/states/ws_x.env_y.main", http.StatusNotFound, "not_found"},
		{"/ui/states/bad%20name", http.StatusBadRequest, "invalid_state_name"},
		{"/ui/states/demo?before=x", http.StatusBadRequest, "invalid_parameter"},
		{"/ui/states/demo?before=0", http.StatusBadRequest, "invalid_parameter"},
		{"/ui/states/demo/diff?from=@bogus", http.StatusBadRequest, "invalid_version_ref"},
		{"/ui/states/demo/diff?from=bogus", http.StatusNotFound, "version_not_found"},
		{"/ui/states/demo/diff?from=@1&to=@9", http.StatusNotFound, "version_not_found"},
		{"/ui/states/demo/instance", http.StatusBadRequest, "invalid_parameter"},
		{"/ui/states/demo/instance?address=terraform_data.none", http.StatusNotFound, "not_found"},
		{"/ui/states/demo/instance?address=" + strings.Repeat("a", 5000), http.StatusBadRequest, "invalid_parameter"},
		{"/ui/states/demo/graph?address=terraform_data.web&direction=up", http.StatusBadRequest, "invalid_parameter"},
		{"/ui/states/demo/graph?address=terraform_data.web&depth=-1", http.StatusBadRequest, "invalid_parameter"},
		{"/ui/states/demo/graph?address=terraform_data.none", http.StatusBadRequest, "unknown_address"},
		{"/ui/states/demo/search?text=" + strings.Repeat("a", 2000), http.StatusBadRequest, "invalid_parameter"},
		{"/ui/nowhere", http.StatusNotFound, "page_not_found"},
		{"/ui/login", http.StatusSeeOther, ""}, // no sign-in without auth
	}
	for _, tt := range tests {
		t.Run(tt.target[:min(len(tt.target), 60)], func(t *testing.T) {
			w := env.do("GET", tt.target, nil)
			if w.Code != tt.status {
				t.Fatalf("GET %s = %d %s, want %d", tt.target, w.Code, w.Body, tt.status)
			}
			if tt.code == "" {
				return
			}
			var body struct{ Error, Message, Hint string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error != tt.code || body.Message == "" || body.Hint == "" {
				t.Errorf("GET %s body = %s, want error %s with a message and a hint", tt.target, w.Body, tt.code)
			}
			page := env.do("GET", tt.target, nil, html...)
			if page.Code != tt.status || !strings.Contains(page.Body.String(), `data-error="`+tt.code+`"`) || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
				t.Errorf("GET %s as a browser = %d %s", tt.target, page.Code, page.Body)
			}
		})
	}
}

// TestUIStaticPagesNeedNoScript: only the live page loads a script, and
// every page forbids inline script, framing and other origins.
func TestUIStaticPagesNeedNoScript(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.post("demo", "", stateDoc(t, "lin", 1, map[string]string{"web": "v1"}))
	env.post("demo", "", stateDoc(t, "lin", 2, map[string]string{"web": "v2"}))
	for _, page := range append(uiPages("demo"), "/ui/", "/ui/live") {
		w := env.do("GET", page, nil, html...)
		if w.Code != 200 {
			t.Fatalf("GET %s = %d %s", page, w.Code, w.Body)
		}
		if scripts := strings.Count(w.Body.String(), "<script"); scripts != map[bool]int{true: 1, false: 0}[page == "/ui/live"] {
			t.Errorf("%s has %d scripts", page, scripts)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s CSP %q", page, csp)
		}
	}
	if w := env.do("GET", "/ui/live", nil, html...); !strings.Contains(w.Body.String(), `<noscript><meta http-equiv="refresh"`) {
		t.Errorf("the live page does not refresh without a script")
	}
}

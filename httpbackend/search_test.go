package httpbackend

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/tenancy"
)

// TestSearchTenantMatrix: GET /v1/api/search and its duplicates answer a
// token or a PAT from its environments' states only, on both stores; an
// outputs token may not search; the operator searches every state.
func TestSearchTenantMatrix(t *testing.T) { eachAuthEnv(t, testSearchTenantMatrix) }

func testSearchTenantMatrix(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, marker := seedCrossTenant(t, env, ts)
	search := func(q string, header []string) (int, string) {
		w := env.do("GET", "/v1/api/search?"+q, nil, header...)
		return w.Code, w.Body.String()
	}
	type cred struct {
		tenant int
		envs   map[int]bool
		header []string
		kind   string
	}
	var creds []cred
	for ti, f := range tenants {
		for ei := range f.envs {
			creds = append(creds,
				cred{ti, map[int]bool{ei: true}, bearer(f.auto[ei]), "read-write token"},
				cred{ti, map[int]bool{ei: true}, basic(f.ws.ID, f.autoRead[ei]), "read token"})
		}
		creds = append(creds, cred{ti, map[int]bool{0: true, 1: true}, bearer(f.pat), "PAT"})
	}
	queries := []string{"", "text=secret", "type=terraform_data", "address=terraform_data.web", "attr=input.type%3Dstring", "state=*", "state=main", "data=true"}
	for _, c := range creds {
		for _, q := range queries {
			code, body := search(q, c.header)
			if code != http.StatusOK {
				t.Fatalf("%s (tenant %d) ?%s: %d %s", c.kind, c.tenant, q, code, body)
			}
			leaks(t, body, c.tenant, c.envs, tenants, marker)
			for ei := range tenants[c.tenant].envs {
				if got := strings.Contains(body, tenants[c.tenant].envs[ei].PublicID); got != c.envs[ei] {
					t.Errorf("%s (tenant %d) ?%s finds environment %d: %v, want %v: %s", c.kind, c.tenant, q, ei, got, c.envs[ei], body)
				}
			}
		}
		w := env.do("GET", "/v1/api/search/duplicates", nil, c.header...)
		if w.Code != http.StatusOK {
			t.Errorf("%s duplicates: %d %s", c.kind, w.Code, w.Body)
		}
		leaks(t, w.Body.String(), c.tenant, c.envs, tenants, marker)
	}
	f := tenants[0]
	if code, body := search("text=secret", basic(f.ws.ID, f.autoOut[0])); code != http.StatusForbidden {
		t.Errorf("an outputs token's search = %d %s", code, body)
	}
	if code, body := search("", bearer("klt_nope")); code != http.StatusUnauthorized {
		t.Errorf("an unknown token's search = %d %s", code, body)
	}
	code, body := search("text=secret-t", bearer(operatorSecret))
	var page inventory.Page
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Hits) != 3*2 {
		t.Errorf("the operator's search = %d %s", code, body)
	}
	for _, h := range page.Hits {
		if h.Address != "terraform_data.web" || h.Version != 1 || len(h.Paths) == 0 {
			t.Errorf("the operator's hit %+v", h)
		}
	}
}

// TestSearchBadInput: every bad filter is a 400 naming it, with a hint.
func TestSearchBadInput(t *testing.T) {
	env := newEnv(t, "", Options{})
	for _, tc := range []struct{ query, code string }{
		{"nope=1", "invalid_parameter"},
		{"type=a&type=b", "invalid_parameter"},
		{"limit=ten", "invalid_limit"},
		{"limit=0x10", "invalid_limit"},
		{"limit=-1", "invalid_limit"},
		{"limit=100000", "invalid_limit"},
		{"data=maybe", "invalid_parameter"},
		{"attr=novalue", "invalid_attr"},
		{"attr=" + url.QueryEscape(".a=1"), "invalid_attr"},
		{"address=aws_instance", "invalid_address"},
		{"address=output.x", "invalid_address"},
		{"address=" + url.QueryEscape("module.a[.*"), "invalid_address"},
		{"cursor=abc", "invalid_cursor"},
	} {
		w := env.do("GET", "/v1/api/search?"+tc.query, nil)
		if w.Code != http.StatusBadRequest {
			t.Errorf("?%s = %d %s, want 400", tc.query, w.Code, w.Body)
			continue
		}
		if b := errorOf(t, w); b.Error != tc.code {
			t.Errorf("?%s = %s, want %s", tc.query, b.Error, tc.code)
		}
	}
	w := env.do("GET", "/v1/api/search/duplicates?typo=x", nil)
	if w.Code != http.StatusBadRequest || errorOf(t, w).Error != "invalid_parameter" {
		t.Errorf("duplicates?typo=x = %d %s", w.Code, w.Body)
	}
	if w := env.do("GET", "/v1/api/search", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"hits":[]`) {
		t.Errorf("a search of an empty store = %d %s", w.Code, w.Body)
	}
}

// TestUISearchCrossTenant: the web view's search across states and its
// duplicates show a token or a PAT the hits of its environments only.
func TestUISearchCrossTenant(t *testing.T) { eachAuthEnv(t, testUISearchCrossTenant) }

func testUISearchCrossTenant(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, marker := seedCrossTenant(t, env, ts)
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
		w := env.do("GET", "/ui/search?text=secret&type=terraform_data", nil, append(uiCookie(c.secret), html...)...)
		if w.Code != http.StatusOK {
			t.Fatalf("%s (tenant %d) /ui/search = %d %s", c.kind, c.tenant, w.Code, w.Body)
		}
		leaks(t, w.Body.String(), c.tenant, c.envs, tenants, marker)
		if n := strings.Count(w.Body.String(), "<tr data-state="); n != len(c.envs) {
			t.Errorf("%s (tenant %d) /ui/search: %d hits, want %d", c.kind, c.tenant, n, len(c.envs))
		}
		w = env.do("GET", "/ui/duplicates", nil, append(uiCookie(c.secret), html...)...)
		if w.Code != http.StatusOK {
			t.Errorf("%s (tenant %d) /ui/duplicates = %d", c.kind, c.tenant, w.Code)
		}
		leaks(t, w.Body.String(), c.tenant, c.envs, tenants, marker)
	}
}

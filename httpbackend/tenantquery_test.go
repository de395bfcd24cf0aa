package httpbackend

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/store/storetest"
	"github.com/kilolock/kilolock/tenancy"
)

// TestTenantQueryMatrix extends the cross-tenant matrix to kl query: for
// each kind of credential, the views hold exactly the states it may read,
// and every hostile statement answers only those or a refusal, never a
// 5xx; an outputs token may not query; the operator still sees everything.
func TestTenantQueryMatrix(t *testing.T) { eachAuthEnv(t, testTenantQueryMatrix) }

func testTenantQueryMatrix(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, marker := seedCrossTenant(t, env, ts)
	query := func(sql string, header []string) (int, string) {
		w := env.do("POST", "/v1/api/query", mustJSON(t, map[string]string{"sql": sql}), header...)
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
	battery := append([]string{`SELECT state, attributes FROM resources`}, storetest.HostileQueries...)
	for _, c := range creds {
		code, body := query(`SELECT state, attributes FROM resources ORDER BY state`, c.header)
		if code != http.StatusOK {
			t.Fatalf("%s (tenant %d): %d %s", c.kind, c.tenant, code, body)
		}
		for ei := range tenants[c.tenant].envs {
			if got := strings.Contains(body, marker(c.tenant, ei)); got != c.envs[ei] {
				t.Errorf("%s (tenant %d) sees environment %d: %v, want %v: %s", c.kind, c.tenant, ei, got, c.envs[ei], body)
			}
		}
		for _, q := range battery {
			code, body := query(q, c.header)
			if code >= 500 || (code != http.StatusOK && code != http.StatusBadRequest && code != http.StatusForbidden) {
				t.Errorf("%s: %s = %d %s", c.kind, q, code, body)
			}
			leaks(t, body, c.tenant, c.envs, tenants, marker)
		}
	}
	// An outputs token reads no resources; a PAT whose user left reaches
	// nothing; neither may query, whatever the statement.
	f := tenants[0]
	for _, q := range append([]string{`SELECT 1`}, storetest.HostileQueries...) {
		if code, body := query(q, basic(f.ws.ID, f.autoOut[0])); code != http.StatusForbidden || !strings.Contains(body, "query_scope_empty") {
			t.Errorf("an outputs token's %s = %d %s", q, code, body)
		}
	}
	mustDo(t, ts.RemoveMember(t.Context(), f.ws.ID, f.user))
	if code, body := query(`SELECT 1`, bearer(f.pat)); code != http.StatusForbidden {
		t.Errorf("a removed member's PAT's query = %d %s", code, body)
	}
	if code, body := query(`SELECT 1`, bearer("klt_nope")); code != http.StatusUnauthorized {
		t.Errorf("an unknown token's query = %d %s", code, body)
	}
	// The operator's query is unchanged: every state.
	code, body := query(`SELECT count(*) AS n FROM resources`, bearer(operatorSecret))
	if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("[%d]", 3*2)) {
		t.Errorf("the operator's query = %d %s", code, body)
	}
}

// FuzzTenantQuery: whatever SQL a credential of tenant 0 sends (a
// read-write or read token of its first environment, its PAT granted both,
// or an outputs token), the lane over each store answers it without a 5xx
// and without a byte of another environment's states; the outputs token
// is refused.
func FuzzTenantQuery(f *testing.F) {
	for i, q := range storetest.HostileQueries {
		f.Add(uint8(i), q)
	}
	type lane struct {
		name    string
		env     *testEnv
		tenants []*tenantFixture
		marker  func(int, int) string
	}
	var lanes []lane
	for _, be := range benchBackends {
		st, err := be.open(f)
		if err != nil {
			f.Fatalf("%s: %v", be.name, err)
		}
		env := newEnvOn(f, st, Options{Auth: AuthToken, OperatorToken: operatorSecret})
		tenants, marker := seedCrossTenant(f, env, st.(tenancy.TenantStore))
		lanes = append(lanes, lane{be.name, env, tenants, marker})
	}
	f.Fuzz(func(t *testing.T, kind uint8, sql string) {
		for _, l := range lanes {
			t0 := l.tenants[0]
			k := []struct {
				header []string
				envs   map[int]bool
			}{
				{bearer(t0.auto[0]), map[int]bool{0: true}},
				{bearer(t0.autoRead[0]), map[int]bool{0: true}},
				{bearer(t0.pat), map[int]bool{0: true, 1: true}},
				{basic(t0.ws.ID, t0.autoOut[0]), nil},
			}[int(kind)%4]
			req := httptest.NewRequest("POST", "/v1/api/query", bytes.NewReader(mustJSON(t, map[string]string{"sql": sql})))
			req.Header.Set(k.header[0], k.header[1])
			w := httptest.NewRecorder()
			l.env.h.ServeHTTP(w, req)
			if w.Code >= 500 {
				t.Fatalf("%s: %q = %d %s", l.name, sql, w.Code, w.Body)
			}
			if k.envs == nil && w.Code != http.StatusForbidden && w.Code != http.StatusBadRequest {
				t.Fatalf("%s: an outputs token's %q = %d %s", l.name, sql, w.Code, w.Body)
			}
			leaks(t, w.Body.String(), 0, k.envs, l.tenants, l.marker)
		}
	})
}

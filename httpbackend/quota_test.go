package httpbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// inputs is a state's terraform_data resources w0 … w(n-1), for stateDoc.
func inputs(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("w%d", i)] = "v"
	}
	return m
}

// setQuota sets a limit through PUT /v1/api/quotas, failing the test
// unless it is 200.
func (e *testEnv) setQuota(body string, header ...string) {
	e.t.Helper()
	if w := e.do("PUT", "/v1/api/quotas", []byte(body), header...); w.Code != http.StatusOK {
		e.t.Fatalf("PUT /v1/api/quotas %s: %d %s", body, w.Code, w.Body)
	}
}

// TestQuotaOnTheLocalLane: a state's limit set through the API holds its
// POSTs: above soft is answered with the warning (and logged), past hard
// 403 quota_exceeded with the figures, logged with the request id,
// audited, counted, and nothing stored; GET …/quota reports the standing
// and admits a plan's delta the same way.
func TestQuotaOnTheLocalLane(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		env.setQuota(`{"scope":"state","target":"net","limit":{"soft":1,"hard":2}}`)
		env.post("net", "", stateDoc(t, "lin", 1, inputs(1)))
		w := env.do("POST", "/v1/states/net", stateDoc(t, "lin", 2, inputs(2)))
		var ans writeAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &ans); w.Code != http.StatusOK || err != nil || len(ans.QuotaWarnings) != 1 || ans.QuotaWarnings[0].Result != 2 {
			t.Fatalf("POST to exactly the hard limit: %d %s, want 200 with one warning", w.Code, w.Body)
		}
		if !strings.Contains(env.logs.String(), `quota_warning="state net: 2 managed instance(s) is above the soft limit of 1 (hard 2, 0 left)"`) {
			t.Errorf("the request line does not carry the warning:\n%s", env.logs.String())
		}

		w = env.do("POST", "/v1/states/net", stateDoc(t, "lin", 3, inputs(3)), "X-Request-Id", "req-quota-1")
		b := errorOf(t, w)
		if w.Code != http.StatusForbidden || b.Error != "quota_exceeded" || w.Header().Get("X-Kilolock-Error") != "quota_exceeded" {
			t.Fatalf("POST past the hard limit: %d %s, want 403 quota_exceeded", w.Code, w.Body)
		}
		if b.Scope != quota.ScopeState || b.Target != "net" || *b.Current != 2 || *b.Result != 3 || *b.Soft != 1 || *b.Hard != 2 || b.LimitFrom != kilolock.LimitFromState || len(b.Counts) != 1 {
			t.Errorf("refusal body %s: want state net from 2 to 3, soft 1, hard 2", w.Body)
		}
		if !strings.Contains(b.Message, "3 managed instance(s) would exceed the hard limit of 2 (soft 1)") || !strings.Contains(b.Hint, "kl quota set --state net") {
			t.Errorf("message %q, hint %q", b.Message, b.Hint)
		}
		logs := env.logs.String()
		if !strings.Contains(logs, "request denied") || !strings.Contains(logs, "request_id=req-quota-1 reason=quota_exceeded") || !strings.Contains(logs, "result=3 soft=1 hard=2") {
			t.Errorf("the refusal is not logged with its request id and figures:\n%s", logs)
		}
		audit, err := env.store.(tenancy.TenantStore).Audit(context.Background(), kilolock.AuditFilter{DeniedOnly: true})
		if err != nil || len(audit) != 1 || audit[0].Reason != "quota_exceeded" || audit[0].RequestID != "req-quota-1" || audit[0].Action != "POST state" {
			t.Errorf("denied audit entries %+v, %v; want the quota refusal", audit, err)
		}
		if m := env.do("GET", "/metrics", nil).Body.String(); !strings.Contains(m, `kl_quota_denials_total{code="quota_exceeded"} 1`+"\n") {
			t.Errorf("/metrics does not count the refusal")
		}
		if got := env.do("GET", "/v1/states/net", nil); got.Header().Get("X-Kilolock-Serial") != "2" {
			t.Errorf("after the refusal the state is at serial %s, want 2", got.Header().Get("X-Kilolock-Serial"))
		}

		for _, path := range []string{"/v1/states/net/quota", "/v1/api/states/net/quota"} {
			w := env.do("GET", path, nil)
			var st kilolock.QuotaStatus
			if err := json.Unmarshal(w.Body.Bytes(), &st); w.Code != http.StatusOK || err != nil || st.Counts[0].Current != 2 || st.Counts[0].Remaining != 0 ||
				st.LatestRefusal == nil || st.LatestRefusal.Result != 3 || st.LatestWarning == nil || st.LatestWarning.Version != 2 {
				t.Errorf("GET %s: %d %s", path, w.Code, w.Body)
			}
		}
		w = env.do("GET", "/v1/states/net/quota?delta=1", nil)
		if b := errorOf(t, w); w.Code != http.StatusForbidden || b.Error != "quota_exceeded" || *b.Result != 3 || len(b.Counts) != 1 {
			t.Errorf("admission of +1: %d %s, want 403 quota_exceeded at 3", w.Code, w.Body)
		}
		w = env.do("GET", "/v1/states/net/quota?delta=-1", nil)
		if !strings.Contains(w.Body.String(), `"level":"within"`) || w.Code != http.StatusOK {
			t.Errorf("admission of -1: %d %s, want 200 within", w.Code, w.Body)
		}
		if w := env.do("GET", "/v1/states/net/quota?delta=two", nil); w.Code != http.StatusBadRequest || errorOf(t, w).Error != "invalid_parameter" {
			t.Errorf("a delta that is not a number: %d %s", w.Code, w.Body)
		}
		if w := env.do("GET", "/v1/states/new/quota?delta=5", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"exists":false`) {
			t.Errorf("admission on a state with no version: %d %s", w.Code, w.Body)
		}
	})
}

// TestQuotaSettingsAPI: PUT /v1/api/quotas refuses what it cannot set
// with a reason; an open server sets states' limits only.
func TestQuotaSettingsAPI(t *testing.T) {
	env := newEnv(t, "", Options{})
	for _, tt := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"scope":"state","target":"net"}`, http.StatusBadRequest, "invalid_quota"},
		{`{"scope":"state","target":"net","limit":{"hard":2},"clear":true}`, http.StatusBadRequest, "invalid_quota"},
		{`{"scope":"state","target":"net","limit":{"soft":3,"hard":2}}`, http.StatusBadRequest, "invalid_quota"},
		{`{"scope":"state","target":"net","limit":{"hard":-1}}`, http.StatusBadRequest, "invalid_quota"},
		{`{"scope":"state","target":"net","limit":{"hard":2},"color":"red"}`, http.StatusBadRequest, "unknown_field"},
		{`{"scope":"state","target":"a b","limit":{"hard":2}}`, http.StatusBadRequest, "invalid_state_name"},
		{`{"scope":"environment","target":"env_0123456789abcdef","limit":{"hard":2}}`, http.StatusNotFound, "tenancy_disabled"},
		{`{"scope":"workspace_states","target":"ws_0123456789abcdef","limit":{"hard":2}}`, http.StatusNotFound, "tenancy_disabled"},
	} {
		w := env.do("PUT", "/v1/api/quotas", []byte(tt.body))
		if b := errorOf(t, w); w.Code != tt.status || b.Error != tt.code {
			t.Errorf("PUT %s: %d %s, want %d %s", tt.body, w.Code, w.Body, tt.status, tt.code)
		}
	}
	env.setQuota(`{"scope":"state","target":"net","limit":{"unlimited":true}}`)
	env.setQuota(`{"scope":"state","target":"db","limit":{"soft":5,"hard":9}}`)
	env.setQuota(`{"scope":"state","target":"net","clear":true}`)
	w := env.do("GET", "/v1/api/quotas", nil)
	var got []kilolock.QuotaSetting
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || len(got) != 1 || got[0].Target != "db" || got[0].Limit != (quota.Limit{Soft: 5, Hard: 9}) {
		t.Errorf("GET /v1/api/quotas: %d %s", w.Code, w.Body)
	}
	audit, _ := env.store.(tenancy.TenantStore).Audit(context.Background(), kilolock.AuditFilter{})
	if len(audit) != 3 || audit[0].Action != "quota.clear" || audit[0].Actor != "anonymous" {
		t.Errorf("audit %+v, want three quota changes", audit)
	}
}

// TestQuotaOnTheTenantLane: a token reads its state's quota beside the
// state (read access: a read token may, an outputs token may not); the
// environment's limit, set by the operator, refuses a POST of the token
// naming the environment; only the operator sets limits.
func TestQuotaOnTheTenantLane(t *testing.T) { eachAuthEnv(t, testQuotaOnTheTenantLane) }

func testQuotaOnTheTenantLane(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	f := seedTenant(t, ts, "acme", "prod", "dev")
	op := bearer(operatorSecret)
	if w := env.do("PUT", "/v1/api/quotas", []byte(`{"scope":"state","target":"x","limit":{"hard":2}}`)); w.Code != http.StatusUnauthorized {
		t.Errorf("PUT /v1/api/quotas without the operator token: %d", w.Code)
	}
	env.setQuota(`{"scope":"environment","target":"`+f.envs[0].PublicID+`","workspace":"`+f.ws.ID+`","limit":{"soft":2,"hard":3}}`, op...)
	post := func(env0 int, state string, serial uint64, n int) *httpResult {
		w := env.do("POST", f.path(env0, state), stateDoc(t, "lin-"+state, serial, inputs(n)), basic(f.ws.ID, f.auto[env0])...)
		return &httpResult{w.Code, w.Body.String()}
	}
	if r := post(0, "a", 1, 2); r.code != http.StatusOK {
		t.Fatalf("POST a: %+v", r)
	}
	if r := post(0, "b", 1, 1); r.code != http.StatusOK || !strings.Contains(r.body, `"quota_warnings"`) {
		t.Fatalf("POST b to prod's hard limit: %+v, want 200 with a warning", r)
	}
	r := post(0, "b", 2, 2)
	if r.code != http.StatusForbidden || !strings.Contains(r.body, `"scope":"environment"`) || !strings.Contains(r.body, `"target":"`+f.envs[0].PublicID+`"`) {
		t.Errorf("POST past prod's limit: %+v, want 403 naming the environment", r)
	}
	if r := post(1, "b", 1, 5); r.code != http.StatusOK {
		t.Errorf("dev is not prod: %+v", r)
	}
	for _, tok := range []string{f.auto[0], f.autoRead[0]} {
		w := env.do("GET", f.path(0, "b")+"/quota", nil, basic(f.ws.ID, tok)...)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"environment":"`+f.envs[0].PublicID+`"`) || !strings.Contains(w.Body.String(), `"latest_refusal"`) {
			t.Errorf("GET …/b/quota: %d %s", w.Code, w.Body)
		}
	}
	if w := env.do("GET", f.path(0, "b")+"/quota?delta=1", nil, basic(f.ws.ID, f.autoRead[0])...); w.Code != http.StatusForbidden || errorOf(t, w).Error != "quota_exceeded" {
		t.Errorf("a read token's admission of +1: %d %s", w.Code, w.Body)
	}
	if w := env.do("GET", f.path(0, "b")+"/quota", nil, basic(f.ws.ID, f.autoOut[0])...); w.Code != http.StatusForbidden || errorOf(t, w).Error != "token_outputs_only" {
		t.Errorf("an outputs token reading the quota: %d %s", w.Code, w.Body)
	}
	audit, _ := ts.Audit(context.Background(), kilolock.AuditFilter{DeniedOnly: true})
	found := false
	for _, e := range audit {
		found = found || (e.Reason == "quota_exceeded" && e.Action == "POST state" && strings.HasPrefix(e.Actor, "tok_"))
	}
	if !found {
		t.Errorf("no audited quota refusal by the token: %+v", audit)
	}
}

type httpResult struct {
	code int
	body string
}

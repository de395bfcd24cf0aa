package httpbackend

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// seedOps writes three versions of state "app": a=v1; a=v2,b=v1; a=v3,b=v1.
func seedOps(t *testing.T) *testEnv {
	t.Helper()
	env := newEnv(t, "", Options{})
	env.post("app", "", stateDoc(t, "lin-1", 1, map[string]string{"a": "v1"}))
	env.post("app", "", stateDoc(t, "lin-1", 2, map[string]string{"a": "v2", "b": "v1"}))
	env.post("app", "", stateDoc(t, "lin-1", 3, map[string]string{"a": "v3", "b": "v1"}))
	return env
}

// answerOf decodes a JSON answer of any status.
func answerOf[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v
}

func TestStateOpsReads(t *testing.T) {
	env := seedOps(t)
	base := "/v1/api/states/app"
	for _, tc := range []struct {
		target string
		status int
		want   string // in the body
	}{
		{base + "/versions/" + url.PathEscape("@1") + "/summary", 200, `"number":1`},
		{base + "/versions/%40latest/summary", 200, `"current":true`},
		{base + "/versions/" + url.PathEscape("serial:2") + "/summary", 200, `"serial":2`},
		{base + "/versions/" + url.PathEscape("@-1") + "/summary", 200, `"number":2`},
		{base + "/versions/" + url.PathEscape("@9") + "/summary", 404, "@1…@3 (serials 1…3)"},
		{base + "/versions/@nine/summary", 400, "invalid_version_ref"},
		{base + "/versions/nine/summary", 404, "version_not_found"},
		{base + "/instance?ref=%401&address=terraform_data.a", 200, `"v1"`},
		{base + "/instance?ref=%401&address=terraform_data.b", 404, "terraform_data.b"},
		{base + "/instance?ref=%401", 400, "parameter_missing"},
		{base + "/diff?from=%401&to=%403", 200, `"added":["terraform_data.b"]`},
		{base + "/diff?from=%401&to=%407", 404, "version_not_found"},
		{base + "/address-history?address=terraform_data.a", 200, `"kind":"changed"`},
		{base + "/address-history?address=terraform_data.zz", 404, "not_found"},
		{base + "/state/list?pattern=terraform_data.b", 200, `"id":"terraform_data.b"`},
		{base + "/export?ref=%402", 200, `"serial": 2`},
		{"/v1/api/states/nope/export", 404, "not_found"},
	} {
		w := env.do("GET", tc.target, nil)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("GET %s = %d %s; want %d with %q", tc.target, w.Code, w.Body, tc.status, tc.want)
		}
	}
}

func TestStateOpsWrites(t *testing.T) {
	env := seedOps(t)
	base := "/v1/api/states/app"

	// A dry run writes nothing and carries the warning.
	w := env.do("POST", base+"/rollback", []byte(`{"to":"@1"}`))
	if w.Code != 200 {
		t.Fatalf("rollback dry run: %d %s", w.Code, w.Body)
	}
	plan := answerOf[RollbackResponse](t, w.Body.Bytes())
	if !plan.DryRun || plan.Version != nil || plan.Plan.Warning == "" || len(plan.Plan.Removed) != 1 || len(plan.Plan.Changed) != 1 {
		t.Errorf("dry run = %s", w.Body)
	}

	// Applied, it is a new version made by the header's actor.
	w = env.do("POST", base+"/rollback", []byte(`{"to":"@1","apply":true}`), ActorHeader, "ops@example.com")
	res := answerOf[RollbackResponse](t, w.Body.Bytes())
	if w.Code != 200 || res.Version == nil || res.Version.Number != 4 || res.Version.Serial != 4 ||
		res.Version.Source != kilolock.SourceRollback || res.Version.Actor != "ops@example.com" {
		t.Fatalf("rollback = %d %s", w.Code, w.Body)
	}

	// state rm, dry run then for real, by the default actor.
	env.post("app", "", stateDoc(t, "lin-1", 5, map[string]string{"a": "v1", "b": "v1", "c": "v1"}))
	w = env.do("POST", base+"/state/rm", []byte(`{"addresses":["terraform_data.c"],"dry_run":true}`))
	if op := answerOf[history.StateOpResult](t, w.Body.Bytes()); w.Code != 200 || !op.DryRun || op.Version != nil || len(op.Plan.Removed) != 1 {
		t.Errorf("rm dry run = %d %s", w.Code, w.Body)
	}
	w = env.do("POST", base+"/state/rm", []byte(`{"addresses":["terraform_data.c"]}`))
	if op := answerOf[history.StateOpResult](t, w.Body.Bytes()); w.Code != 200 || op.Version == nil || op.Version.Actor != "kl" || op.Version.Source != kilolock.SourceStateOp {
		t.Errorf("rm = %d %s", w.Code, w.Body)
	}
	w = env.do("POST", base+"/state/mv", []byte(`{"from":"terraform_data.b","to":"module.demo.terraform_data.b"}`))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "module.demo.terraform_data.b") {
		t.Errorf("mv = %d %s", w.Code, w.Body)
	}
	w = env.do("POST", base+"/state/mv", []byte(`{"from":"terraform_data.a","to":"module.demo.terraform_data.b"}`))
	if w.Code != 400 {
		t.Errorf("mv onto a taken address = %d %s", w.Code, w.Body)
	}

	// Import: another lineage is a 409 unless forced; a new state takes it.
	other := stateDoc(t, "lin-2", 1, map[string]string{"z": "v1"})
	w = env.do("POST", base+"/import", other)
	if b := errorOf(t, w); w.Code != 409 || b.Error != kilolock.ReasonLineage {
		t.Errorf("import other lineage = %d %s", w.Code, w.Body)
	}
	w = env.do("POST", base+"/import?force=true", other)
	if r := answerOf[ImportResponse](t, w.Body.Bytes()); w.Code != 200 || r.Version.Source != kilolock.SourceImport || r.Version.Serial <= 7 {
		t.Errorf("forced import = %d %s", w.Code, w.Body)
	}
	w = env.do("POST", "/v1/api/states/fresh/import", other)
	if r := answerOf[ImportResponse](t, w.Body.Bytes()); w.Code != 200 || r.Version.Number != 1 {
		t.Errorf("import into a new state = %d %s", w.Code, w.Body)
	}

	// Refused while held, naming the holder, as a JSON error.
	env.lock("app", lockInfo("lock-9", "carol"))
	for _, tc := range []struct{ path, body string }{
		{"/rollback", `{"to":"@1"}`},
		{"/state/rm", `{"addresses":["terraform_data.a"]}`},
		{"/state/mv", `{"from":"terraform_data.a","to":"terraform_data.q"}`},
	} {
		w = env.do("POST", base+tc.path, []byte(tc.body))
		if b := errorOf(t, w); w.Code != http.StatusLocked || b.Holder == nil || b.Holder.Who != "carol" || !strings.Contains(b.Message, "carol") {
			t.Errorf("%s while locked = %d %s", tc.path, w.Code, w.Body)
		}
	}

	for _, tc := range []struct{ path, body, code string }{
		{"/rollback", `{}`, "version_missing"},
		{"/rollback", `{"to":"3"}`, "invalid_version_ref"},
		{"/rollback", `{"to":"@1","bogus":1}`, "unknown_field"},
		{"/state/rm", `{"addresses":[]}`, "address_missing"},
	} {
		w = env.do("POST", base+tc.path, []byte(tc.body))
		if b := errorOf(t, w); w.Code != 400 || b.Error != tc.code {
			t.Errorf("POST %s %s = %d %s, want 400 %s", tc.path, tc.body, w.Code, w.Body, tc.code)
		}
	}
}

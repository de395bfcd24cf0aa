package httpbackend

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/tenancy"
)

// TestTagsAPI: a tag set through the API is a version reference of the
// other routes, its changes are audited as the client named itself, and
// bad names and refs are 4xx with a hint.
func TestTagsAPI(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		env.post("app", "", stateDoc(t, "lin-1", 1, map[string]string{"a": "v1"}))
		env.post("app", "", stateDoc(t, "lin-1", 2, map[string]string{"a": "v2"}))
		base := "/v1/api/states/app"
		w := env.do("PUT", base+"/tags/pre-migration", []byte(`{"ref":"@1","description":"before"}`), ActorHeader, "alice")
		if w.Code != http.StatusOK || answerOf[history.Tag](t, w.Body.Bytes()).Version != 1 {
			t.Fatalf("PUT tag = %d %s", w.Code, w.Body)
		}
		if w := env.do("GET", base+"/diff?from=pre-migration&to=@latest", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"v2"`) {
			t.Errorf("diff from a tag = %d %s", w.Code, w.Body)
		}
		if w := env.do("GET", base+"/export?ref=pre-migration", nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"v1"`) {
			t.Errorf("export of a tag = %d %s", w.Code, w.Body)
		}
		if w := env.do("POST", base+"/rollback", []byte(`{"to":"pre-migration","apply":true}`)); w.Code != http.StatusOK {
			t.Errorf("rollback to a tag = %d %s", w.Code, w.Body)
		}
		if page := env.do("GET", "/ui/states/app", nil, "Accept", "text/html").Body.String(); !strings.Contains(page, `<span class="num">@1</span> <span class="badge">push</span> <span class="pill tag" title="tag: kl rollback app --to pre-migration">pre-migration</span>`) {
			t.Errorf("the timeline does not draw the tag on version 1:\n%s", page)
		}
		list := answerOf[struct{ Tags []history.Tag }](t, env.do("GET", base+"/tags", nil).Body.Bytes())
		if len(list.Tags) != 1 || list.Tags[0].Actor != "alice" || list.Tags[0].Description != "before" {
			t.Errorf("GET tags = %+v", list)
		}
		for _, tc := range []struct {
			method, target, body string
			status               int
			code                 string
		}{
			{"PUT", base + "/tags/latest", `{"ref":"@1"}`, 400, "invalid_tag"},
			{"PUT", base + "/tags/12", `{"ref":"@1"}`, 400, "invalid_tag"},
			{"PUT", base + "/tags/x", `{"ref":"@9"}`, 404, "version_not_found"},
			{"PUT", base + "/tags/x", `{"ref":"nope"}`, 404, "version_not_found"},
			{"PUT", base + "/tags/x", `{"ref":"@1","extra":1}`, 400, ""},
			{"DELETE", base + "/tags/nope", ``, 404, ""},
			{"GET", base + "/diff?from=nope", ``, 404, ""},
			{"GET", "/v1/api/states/missing/tags", ``, 404, ""},
		} {
			w := env.do(tc.method, tc.target, []byte(tc.body))
			e := errorOf(t, w)
			if w.Code != tc.status || (tc.code != "" && e.Error != tc.code) || e.Hint == "" {
				t.Errorf("%s %s %s = %d %+v, want %d %s with a hint", tc.method, tc.target, tc.body, w.Code, e, tc.status, tc.code)
			}
		}
		if w := env.do("DELETE", base+"/tags/pre-migration", nil, ActorHeader, "bob"); w.Code != http.StatusOK {
			t.Fatalf("DELETE tag = %d %s", w.Code, w.Body)
		}
		entries, err := env.store.(tenancy.TenantStore).Audit(t.Context(), kilolock.AuditFilter{})
		if err != nil || len(entries) != 2 || entries[0].Action != "tag.unset" || entries[0].Actor != "bob" || entries[1].Actor != "alice" {
			t.Errorf("audit = %+v, %v", entries, err)
		}
	})
}

// TestDriftAPI: a report is recorded, listed, and counted in /metrics, the
// web view's states page and the state's summary; a bad one is a 400.
func TestDriftAPI(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		env.post("app", "", stateDoc(t, "lin-1", 1, map[string]string{"a": "v1", "b": "v1"}))
		base := "/v1/api/states/app"
		w := env.do("POST", base+"/drift", []byte(`{"lineage":"lin-1","serial":1,"drifted":[{"address":"terraform_data.a","real":null}]}`), ActorHeader, "ci")
		if w.Code != http.StatusOK {
			t.Fatalf("POST drift = %d %s", w.Code, w.Body)
		}
		got := answerOf[struct{ Drift []drift.DriftRecord }](t, env.do("GET", base+"/drift", nil).Body.Bytes())
		if len(got.Drift) != 1 || got.Drift[0].Kind != drift.DriftDeleted || got.Drift[0].Actor != "ci" {
			t.Fatalf("GET drift = %+v", got)
		}
		if m := env.do("GET", "/metrics", nil).Body.String(); !strings.Contains(m, `kl_drifted_instances{state="app"} 1`) {
			t.Errorf("/metrics lacks the drift")
		}
		if st := answerOf[kilolock.Status](t, env.do("GET", base, nil).Body.Bytes()); st.Drifted == nil || *st.Drifted != 1 {
			t.Errorf("status drifted = %v", st.Drifted)
		}
		if page := env.do("GET", "/ui/", nil, "Accept", "text/html").Body.String(); !strings.Contains(page, "<th>Drift</th>") || !strings.Contains(page, "<td>1</td>") {
			t.Errorf("the states page lacks the drift column:\n%s", page)
		}
		for _, body := range []string{
			`{"lineage":"other","serial":1}`,
			`{"lineage":"lin-1","serial":7}`,
			`{"lineage":"lin-1","serial":1,"drifted":[{"address":"nope.x","real":null}]}`,
			`{"lineage":"lin-1","serial":1,"drifted":[{"address":"terraform_data.a","real":[1]}]}`,
			`not json`,
		} {
			w := env.do("POST", base+"/drift", []byte(body))
			if e := errorOf(t, w); w.Code != http.StatusBadRequest || e.Hint == "" {
				t.Errorf("POST drift %s = %d %+v, want 400 with a hint", body, w.Code, e)
			}
		}
		if w := env.do("POST", base+"/refresh", stateDoc(t, "lin-1", 0, map[string]string{"a": "v1"})); w.Code != http.StatusConflict {
			t.Errorf("a refresh of another serial = %d %s, want 409", w.Code, w.Body)
		}
	})
}

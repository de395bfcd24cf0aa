package httpbackend

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// TestMoves: POST /v1/api/moves moves, previews, and refuses bad input
// and a locked target with a precise 4xx, on each store.
func TestMoves(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		env.post("a", "", stateDoc(t, "aaaaaaaa-0000-4000-8000-000000000001", 1, map[string]string{"x": "1", "y": "2"}))
		env.post("b", "", stateDoc(t, "bbbbbbbb-0000-4000-8000-000000000002", 1, map[string]string{"z": "3"}))
		move := func(req MoveRequest) (*history.MoveResult, *errorBody, int) {
			t.Helper()
			w := env.do("POST", "/v1/api/moves", mustJSON(t, req))
			if w.Code != http.StatusOK {
				e := errorOf(t, w)
				return nil, &e, w.Code
			}
			var res history.MoveResult
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			return &res, nil, w.Code
		}
		res, e, code := move(MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x"}}, DryRun: true})
		if code != 200 || len(res.Moved) != 1 || res.Versions != nil {
			t.Fatalf("dry run: %d %+v %+v", code, res, e)
		}
		for _, tt := range []struct {
			name   string
			req    MoveRequest
			status int
			code   string
		}{
			{"no states", MoveRequest{}, 400, "state_missing"},
			{"no addresses", MoveRequest{From: "a", To: "b"}, 400, "address_missing"},
			{"unknown address", MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.nope"}}}, 400, "unknown_address"},
			{"bad operation", MoveRequest{Operation: "swap", From: "a", To: "b"}, 400, "invalid_operation"},
			{"same state", MoveRequest{From: "a", To: "a", Addresses: []history.MovePair{{From: "terraform_data.x"}}}, 409, "same_state"},
			{"taken address", MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x", To: "terraform_data.z"}}}, 409, "destination_exists"},
			{"split onto an existing state", MoveRequest{Operation: "split", From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x"}}}, 409, "state_exists"},
			{"unknown state", MoveRequest{From: "nope", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x"}}}, 404, ""},
		} {
			_, e, code := move(tt.req)
			if code != tt.status || (tt.code != "" && e.Error != tt.code) || e.Hint == "" {
				t.Errorf("%s: %d %+v, want %d %s", tt.name, code, e, tt.status, tt.code)
			}
		}
		qs := env.store.(kilolock.QuotaStore)
		if err := qs.SetQuota(context.Background(), kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "b"}, &quota.Limit{Soft: 1, Hard: 1}); err != nil {
			t.Fatal(err)
		}
		if _, e, code := move(MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x"}}}); code != 403 || e.Error != "quota_exceeded" || e.Hint == "" {
			t.Errorf("past b's quota: %d %+v", code, e)
		}
		if err := qs.SetQuota(context.Background(), kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "b"}, nil); err != nil {
			t.Fatal(err)
		}
		env.lock("b", lockInfo("apply-b", "bob"))
		if _, e, code := move(MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x"}}}); code != 409 || e.Error != "state_locked" || e.Holder == nil || e.Holder.ID != "apply-b" {
			t.Errorf("into a locked state: %d %+v", code, e)
		}
		if w := env.do("UNLOCK", "/v1/states/b", mustJSON(t, lockInfo("apply-b", "bob"))); w.Code != 200 {
			t.Fatal(w.Body)
		}
		res, _, code = move(MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.x"}}})
		if code != 200 || res.Versions.From.Number != 2 || res.Versions.To.Number != 2 {
			t.Fatalf("move: %d %+v", code, res)
		}
		res, _, code = move(MoveRequest{Operation: "merge", From: "a", To: "b"})
		if code != 200 || !res.Archived {
			t.Fatalf("merge: %d %+v", code, res)
		}
		if _, e, code := move(MoveRequest{From: "a", To: "b", Addresses: []history.MovePair{{From: "terraform_data.y"}}}); code != 400 && code != 403 {
			t.Errorf("out of an archived (emptied) state: %d %+v", code, e)
		}
	})
}

// TestMovesTenants: a token moves within its environment only; a PAT with
// grants on both environments moves across them; another tenant's state
// is never reached.
func TestMovesTenants(t *testing.T) {
	eachAuthEnv(t, func(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
		f := seedTenant(t, ts, "acme", "prod", "dev")
		other := seedTenant(t, ts, "evil", "prod")
		side := func(fx *tenantFixture, e int, name string) string {
			return fx.ws.ID + "/" + fx.envs[e].PublicID + "/" + name
		}
		put := func(fx *tenantFixture, e int, name, secret string, doc []byte) {
			t.Helper()
			if w := env.do("POST", fx.path(e, name), doc, append(basic(fx.ws.ID, secret), "Content-MD5", md5Of(doc))...); w.Code != 200 {
				t.Fatalf("POST %s: %d %s", name, w.Code, w.Body)
			}
		}
		put(f, 0, "a", f.auto[0], stateDoc(t, "aaaaaaaa-0000-4000-8000-000000000001", 1, map[string]string{"x": "1", "y": "2"}))
		put(f, 0, "b", f.auto[0], stateDoc(t, "bbbbbbbb-0000-4000-8000-000000000002", 1, map[string]string{"z": "3"}))
		put(f, 1, "c", f.auto[1], stateDoc(t, "cccccccc-0000-4000-8000-000000000003", 1, map[string]string{"w": "4"}))
		put(other, 0, "v", other.auto[0], stateDoc(t, "dddddddd-0000-4000-8000-000000000004", 1, map[string]string{"v": "5"}))
		move := func(secret string, from, to, addr string) (int, string) {
			t.Helper()
			w := env.do("POST", "/v1/api/moves", mustJSON(t, MoveRequest{From: from, To: to, Addresses: []history.MovePair{{From: addr}}}), bearer(secret)...)
			if w.Code == 200 {
				return 200, ""
			}
			return w.Code, errorOf(t, w).Error
		}
		if code, e := move(f.auto[0], side(f, 0, "a"), side(f, 0, "b"), "terraform_data.x"); code != 200 {
			t.Errorf("a token within its environment: %d %s", code, e)
		}
		if code, e := move(f.auto[0], side(f, 0, "a"), side(f, 1, "c"), "terraform_data.y"); code != 404 {
			t.Errorf("a token across environments: %d %s", code, e)
		}
		if code, e := move(f.autoRead[0], side(f, 0, "a"), side(f, 0, "b"), "terraform_data.y"); code != 403 || e != "token_read_only" {
			t.Errorf("a read token: %d %s", code, e)
		}
		if code, e := move(f.pat, side(f, 0, "a"), side(f, 1, "c"), "terraform_data.y"); code != 200 {
			t.Errorf("a PAT granted both environments: %d %s", code, e)
		}
		if code, e := move(f.pat, side(f, 1, "c"), side(other, 0, "v"), "terraform_data.y"); code != 404 {
			t.Errorf("a PAT into another tenant: %d %s", code, e)
		}
		if code, e := move(other.auto[0], side(other, 0, "v"), side(f, 0, "b"), "terraform_data.v"); code != 404 {
			t.Errorf("another tenant's token into acme: %d %s", code, e)
		}
		w := env.do("POST", "/v1/api/moves", mustJSON(t, MoveRequest{Operation: "split", From: side(f, 0, "a"), To: side(f, 1, "new"),
			Addresses: []history.MovePair{{From: "terraform_data.y"}}}), bearer(f.pat)...)
		if w.Code != 400 || errorOf(t, w).Error != "invalid_split" {
			t.Errorf("a split into another environment: %d %s", w.Code, w.Body)
		}
		if code, _ := move("", "a", "b", "terraform_data.x"); code != 401 {
			t.Errorf("no credentials: %d", code)
		}
		// The operator names internal states.
		w = env.do("POST", "/v1/api/moves", mustJSON(t, MoveRequest{From: f.ws.ID + "." + f.envs[1].PublicID + ".c", To: other.ws.ID + "." + other.envs[0].PublicID + ".v",
			Addresses: []history.MovePair{{From: "terraform_data.w"}}, DryRun: true}), bearer(operatorSecret)...)
		if w.Code != 200 {
			t.Errorf("the operator: %d %s", w.Code, w.Body)
		}
	})
}

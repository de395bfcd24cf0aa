package httpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// TestRetentionAPIBadInput: every malformed retention request is a 4xx
// with a code, and changes no policy.
func TestRetentionAPIBadInput(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.post("net", "", stateDoc(t, "lin", 1, inputs(1)))
	for _, tt := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"PUT", "/v1/api/retention/policies", `{"scope":"state","target":"net","keep_last":-1}`, http.StatusBadRequest, "invalid_retention_policy"},
		{"PUT", "/v1/api/retention/policies", `{"scope":"galaxy","keep_last":1}`, http.StatusBadRequest, "invalid_retention_policy"},
		{"PUT", "/v1/api/retention/policies", `{"scope":"state","target":"a b","keep_last":1}`, http.StatusBadRequest, "invalid_state_name"},
		{"PUT", "/v1/api/retention/policies", `{"scope":"state","target":"net","keep_last":1,"color":"red"}`, http.StatusBadRequest, "unknown_field"},
		{"PUT", "/v1/api/retention/policies", `{"scope":`, http.StatusBadRequest, "malformed_json"},
		{"DELETE", "/v1/api/retention/policies?scope=server", "", http.StatusNotFound, "retention_policy_not_found"},
		{"POST", "/v1/api/retention/apply", `{"batch":10001}`, http.StatusBadRequest, "invalid_parameter"},
		{"POST", "/v1/api/retention/apply", `{"batch":-1}`, http.StatusBadRequest, "invalid_parameter"},
		{"POST", "/v1/api/retention/apply", `{"state":"a b"}`, http.StatusBadRequest, "invalid_state_name"},
		{"POST", "/v1/api/retention/apply", `{"state":"nope"}`, http.StatusNotFound, "not_found"},
		{"GET", "/v1/api/states/net/pruned?limit=-3", "", http.StatusBadRequest, "invalid_parameter"},
		{"GET", "/v1/api/backup", "", http.StatusForbidden, "backup_closed"},
	} {
		w := env.do(tt.method, tt.path, []byte(tt.body))
		if b := errorOf(t, w); w.Code != tt.status || b.Error != tt.code || b.Message == "" || b.Hint == "" {
			t.Errorf("%s %s %s: %d %s, want %d %s with a message and a hint", tt.method, tt.path, tt.body, w.Code, w.Body, tt.status, tt.code)
		}
	}
	ps, err := retention.RetentionPolicies(context.Background(), env.engine)
	if err != nil || len(ps) != 0 {
		t.Errorf("refused requests left policies %+v, %v", ps, err)
	}
}

// TestBackupAPI: with the operator token, GET /v1/api/backup streams a
// whole backup; without it, 401.
func TestBackupAPI(t *testing.T) {
	env := newEnv(t, "", Options{Auth: AuthToken, OperatorToken: "klo_operator"})
	if w := env.do("GET", "/v1/api/backup", nil); w.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/api/backup without a token: %d %s", w.Code, w.Body)
	}
	w := env.do("GET", "/v1/api/backup", nil, "Authorization", "Bearer klo_operator")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/gzip" {
		t.Fatalf("GET /v1/api/backup: %d %s", w.Code, w.Header())
	}
	sum, err := sqlstore.VerifyBackup(bytes.NewReader(w.Body.Bytes()))
	if err != nil || sum.Store != "sqlite" || sum.Format != retention.BackupFormat {
		t.Fatalf("the backup served: %+v, %v", sum, err)
	}
}

// TestRetentionAPIPruned: on each store, a dry run through the API says
// why each version it keeps is kept, and a pruned version asked for is a
// 404 version_pruned that names the run, its policy and the nearest
// version kept, with a hint to read it.
func TestRetentionAPIPruned(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		for i := 1; i <= 5; i++ {
			env.post("net", "", stateDoc(t, "lin", uint64(i), inputs(i)))
		}
		if w := env.do("PUT", "/v1/api/retention/policies", []byte(`{"scope":"state","target":"net","keep_last":2}`)); w.Code != http.StatusOK {
			t.Fatalf("PUT policy: %d %s", w.Code, w.Body)
		}
		w := env.do("POST", "/v1/api/retention/apply", []byte(`{"dry_run":true}`))
		dry := answerOf[retention.RetentionReport](t, w.Body.Bytes())
		if w.Code != http.StatusOK || len(dry.States) != 1 || !slices.Equal(dry.States[0].Versions, []int64{1, 2, 3}) ||
			!slices.Equal(dry.States[0].Kept, []retention.KeptRange{
				{From: 5, To: 5, Reason: retention.KeptCurrent, Detail: "the state's current version"},
				{From: 4, To: 5, Reason: retention.KeptKeepLast, Detail: "state:net keep_last=2: the newest 2"},
			}) {
			t.Fatalf("dry run: %d %s", w.Code, w.Body)
		}
		if w := env.do("POST", "/v1/api/retention/apply", []byte(`{}`)); w.Code != http.StatusOK {
			t.Fatalf("apply: %d %s", w.Code, w.Body)
		}
		w = env.do("GET", "/v1/api/states/net/export?ref=@2", nil)
		b := errorOf(t, w)
		var body struct {
			Pruned  *kilolock.PrunedRange `json:"pruned"`
			Nearest []int64               `json:"nearest"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != http.StatusNotFound || b.Error != "version_pruned" || !strings.Contains(b.Message, "retention pruned @1…@3") ||
			!strings.Contains(b.Message, "policy state:net keep_last=2") || !strings.Contains(b.Hint, "@4") ||
			body.Pruned == nil || body.Pruned.From != 1 || body.Pruned.To != 3 || !slices.Equal(body.Nearest, []int64{4}) {
			t.Errorf("GET a pruned version: %d %s", w.Code, w.Body)
		}
	})
}

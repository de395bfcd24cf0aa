package httpbackend

import (
	"bytes"
	"context"
	"net/http"
	"testing"

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

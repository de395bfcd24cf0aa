package httpbackend

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
)

// TestBadInput sends one bad request of each kind to a state with history
// and checks each gets its 4xx with a JSON error body, and that neither the
// history nor the current bytes changed.
func TestBadInput(t *testing.T) {
	const limit = 64 << 10
	env := newEnv(t, "", Options{BodyLimit: limit})
	a := lockInfo("11111111-aaaa", "alice@laptop")
	env.lock("prod", a)
	env.post("prod", a.ID, stateDoc(t, "lineage-1", 1, map[string]string{"web": "a"}))
	env.post("prod", a.ID, stateDoc(t, "lineage-1", 2, map[string]string{"web": "b"}))

	history := func() []kilolock.Version {
		h, err := env.engine.History(t.Context(), "prod", kilolock.HistoryOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	current := func() []byte { return env.do("GET", "/v1/states/prod", nil).Body.Bytes() }
	beforeHistory, beforeBytes := history(), current()

	good := stateDoc(t, "lineage-1", 3, map[string]string{"web": "c"})
	oversize := stateDoc(t, "lineage-1", 3, map[string]string{"web": strings.Repeat("x", limit)})
	version3 := bytes.Replace(good, []byte(`"version": 4`), []byte(`"version": 3`), 1)
	post := "/v1/states/prod?ID=" + a.ID

	tests := []struct {
		name          string
		method, path  string
		body          []byte
		header        []string
		status        int
		code          string // "" when any code is fine
		hintSubstring string
	}{
		{name: "malformed JSON", method: "POST", path: post, body: []byte(`{"version": 4, "serial": `), status: 400, code: "malformed_json"},
		{name: "state version 3", method: "POST", path: post, body: version3, status: 400, code: "unsupported_state_version"},
		{name: "wrong Content-MD5", method: "POST", path: post, body: good, header: []string{"Content-MD5", md5Of([]byte("something else"))}, status: 400, code: "checksum_mismatch"},
		{name: "Content-MD5 not base64", method: "POST", path: post, body: good, header: []string{"Content-MD5", "!!"}, status: 400, code: "checksum_mismatch"},
		// The checksum is computed beside the parse; a body cut on its way
		// fails both, and the checksum says why.
		{name: "malformed JSON with a wrong Content-MD5", method: "POST", path: post, body: good[:len(good)/2], header: []string{"Content-MD5", md5Of(good)}, status: 400, code: "checksum_mismatch", hintSubstring: "altered or cut"},
		{name: "the current bytes with a wrong Content-MD5", method: "POST", path: post, body: beforeBytes, header: []string{"Content-MD5", md5Of(good)}, status: 400, code: "checksum_mismatch"},
		{name: "a conflicting state with a wrong Content-MD5", method: "POST", path: post, body: stateDoc(t, "lineage-2", 3, map[string]string{"web": "c"}), header: []string{"Content-MD5", md5Of(good)}, status: 400, code: "checksum_mismatch"},
		{name: "oversize body", method: "POST", path: post, body: oversize, status: 413, code: "body_too_large", hintSubstring: "--body-limit"},
		{name: "empty body", method: "POST", path: post, body: []byte{}, status: 400, code: "empty_state"},
		{name: "another lineage", method: "POST", path: post, body: stateDoc(t, "lineage-2", 3, map[string]string{"web": "c"}), status: 409, code: kilolock.ReasonLineage},
		{name: "stale serial", method: "POST", path: post, body: stateDoc(t, "lineage-1", 1, map[string]string{"web": "z"}), status: 409, code: kilolock.ReasonStaleSerial},
		{name: "LockInfo without ID", method: "LOCK", path: "/v1/states/prod", body: []byte(`{"Operation":"OperationTypeApply","Who":"bob"}`), status: 400, code: "lock_id_missing"},
		{name: "LockInfo malformed", method: "LOCK", path: "/v1/states/prod", body: []byte(`{"ID":`), status: 400, code: "malformed_json"},
		{name: "LOCK empty body", method: "LOCK", path: "/v1/states/prod", body: nil, status: 400, code: "lock_info_missing"},
		{name: "UNLOCK malformed", method: "UNLOCK", path: "/v1/states/prod", body: []byte(`not json`), status: 400, code: "malformed_json"},
		{name: "empty state name", method: "POST", path: "/v1/states/", body: good, status: 400, code: "invalid_state_name"},
		{name: "dot-dot", method: "POST", path: "/v1/states/..", body: good, status: 400, code: "invalid_state_name"},
		{name: "encoded dot-dot", method: "POST", path: "/v1/states/%2e%2e", body: good, status: 400, code: "invalid_state_name"},
		{name: "traversal", method: "GET", path: "/v1/states/../../etc/passwd", status: 400, code: "invalid_state_name"},
		{name: "two segments", method: "POST", path: "/v1/states/a/b", body: good, status: 400, code: "invalid_state_name", hintSubstring: "one path segment"},
		{name: "bad characters", method: "POST", path: "/v1/states/a%20b", body: good, status: 400, code: "invalid_state_name"},
		{name: "too long", method: "POST", path: "/v1/states/" + strings.Repeat("a", 129), body: good, status: 400, code: "invalid_state_name"},
		{name: "unknown method", method: "PATCH", path: "/v1/states/prod", body: good, status: 405, code: "method_not_allowed"},
		{name: "config unknown field", method: "POST", path: "/v1/api/states/prod/config", body: []byte(`{"allow_lineage_chnage": true}`), status: 400, code: "unknown_field"},
		{name: "config no setting", method: "POST", path: "/v1/api/states/prod/config", body: []byte(`{}`), status: 400, code: "no_setting"},
		{name: "query that writes", method: "POST", path: "/v1/api/query", body: []byte(`{"sql": "CREATE TABLE kl_probe (a INTEGER)"}`), status: 403, code: "read_only"},
		{name: "bad version number", method: "GET", path: "/v1/api/states/prod/versions/abc", status: 400, code: "invalid_parameter"},
		{name: "bad history limit", method: "GET", path: "/v1/api/states/prod/versions?limit=-1", status: 400, code: "invalid_parameter"},
		{name: "run lease not a duration", method: "POST", path: "/v1/api/states/prod/runs", body: []byte(`{"reservations":[{"pattern":"terraform_data.web","mode":"write"}],"lease":"soon"}`), status: 400, code: "invalid_lease", hintSubstring: "Go duration"},
		{name: "run lease zero", method: "POST", path: "/v1/api/states/prod/runs", body: []byte(`{"reservations":[{"pattern":"terraform_data.web","mode":"write"}],"lease":"0s"}`), status: 400, code: "invalid_lease"},
		{name: "run unknown field", method: "POST", path: "/v1/api/states/prod/runs", body: []byte(`{"reservation":[]}`), status: 400, code: "unknown_field"},
		{name: "run bad pattern", method: "POST", path: "/v1/api/states/prod/runs", body: []byte(`{"reservations":[{"pattern":"module..x","mode":"write"}]}`), status: 400, code: "invalid_reservation", hintSubstring: "module.NAME.*"},
		{name: "run id malformed", method: "GET", path: "/v1/api/runs/nope", status: 400, code: "invalid_run_id", hintSubstring: "kl status"},
		{name: "run end status", method: "POST", path: "/v1/api/runs/run_0123456789abcdef/end", body: []byte(`{"status":"won"}`), status: 400, code: "invalid_run_status"},
		{name: "run end unknown field", method: "POST", path: "/v1/api/runs/run_0123456789abcdef/end", body: []byte(`{"state":"failed"}`), status: 400, code: "unknown_field"},
		{name: "runs in_flight", method: "GET", path: "/v1/api/states/prod/runs?in_flight=maybe", status: 400, code: "invalid_parameter"},
		{name: "runs limit", method: "GET", path: "/v1/api/states/prod/runs?limit=5000", status: 400, code: "invalid_parameter"},
		{name: "changed-since unknown field", method: "POST", path: "/v1/api/states/prod/changed-since", body: []byte(`{"serial":1,"addresses":["a.b"]}`), status: 400, code: "unknown_field"},
		{name: "LOCK for a malformed run", method: "LOCK", path: "/v1/states/prod?run=bogus", body: mustJSON(t, lockInfo("22222222-bbbb", "bob")), status: 400, code: "invalid_run_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := env.do(tt.method, tt.path, tt.body, tt.header...)
			if w.Code != tt.status {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, w.Code, w.Body, tt.status)
			}
			e := errorOf(t, w)
			if tt.code != "" && e.Error != tt.code {
				t.Errorf("error = %q (%s), want %q", e.Error, e.Message, tt.code)
			}
			if !strings.Contains(e.Hint, tt.hintSubstring) {
				t.Errorf("hint %q lacks %q", e.Hint, tt.hintSubstring)
			}
			if diff := cmp.Diff(beforeHistory, history()); diff != "" {
				t.Errorf("history changed (-before +after):\n%s", diff)
			}
			if !bytes.Equal(beforeBytes, current()) {
				t.Errorf("the current state bytes changed")
			}
		})
	}

	// The lineage conflict names both lineages.
	w := env.do("POST", post, stateDoc(t, "lineage-2", 3, map[string]string{"web": "c"}))
	if e := errorOf(t, w); e.Lineage != "lineage-1" || e.GotLineage != "lineage-2" {
		t.Errorf("lineage conflict body = %s, want both lineages", w.Body)
	}
	// The stale serial conflict gives the latest serial.
	w = env.do("POST", post, stateDoc(t, "lineage-1", 1, map[string]string{"web": "z"}))
	if e := errorOf(t, w); e.LatestSerial == nil || *e.LatestSerial != 2 {
		t.Errorf("stale serial body = %s, want latest_serial 2", w.Body)
	}
}

// TestAllowLineageChange: an operator allows one state to take another
// lineage through the config API.
func TestAllowLineageChange(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.post("prod", "", stateDoc(t, "lineage-1", 1, map[string]string{"web": "a"}))
	other := stateDoc(t, "lineage-2", 5, map[string]string{"web": "b"})
	if w := env.do("POST", "/v1/states/prod", other); w.Code != http.StatusConflict {
		t.Fatalf("another lineage: %d, want 409", w.Code)
	}
	w := env.do("POST", "/v1/api/states/prod/config", []byte(`{"allow_lineage_change": true}`))
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"ok":true,"state":"prod","lock_mode":"exclusive","exclusive_locks":true,"allow_lineage_change":true,"shared_plan_locks":true,"require_client_encryption":false}` {
		t.Fatalf("config: %d %s", w.Code, w.Body)
	}
	if w := env.do("POST", "/v1/states/prod", other); w.Code != http.StatusOK {
		t.Errorf("another lineage once allowed: %d %s", w.Code, w.Body)
	}
	if w := env.do("POST", "/v1/api/states/unknown/config", []byte(`{"allow_lineage_change": true}`)); w.Code != http.StatusNotFound {
		t.Errorf("config of an unknown state: %d, want 404", w.Code)
	}
}

// TestOversizeChunkedBody: a body with no Content-Length is cut at the
// limit too.
func TestOversizeChunkedBody(t *testing.T) {
	env := newEnv(t, "", Options{BodyLimit: 1 << 10})
	r := httptest.NewRequest("POST", "/v1/states/s", bytes.NewReader(bytes.Repeat([]byte(" "), 4<<10)))
	r.ContentLength = -1
	w := httptest.NewRecorder()
	env.h.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || errorOf(t, w).Error != "body_too_large" {
		t.Errorf("chunked oversize body: %d %s, want 413 body_too_large", w.Code, w.Body)
	}
}

// TestEncryptionVersionInPlaintext is the reproduction of issue 9, item 7,
// on each store: a plaintext state of another lineage with a top-level
// encryption_version replaced the state (200) as if it were opaque. It is
// refused with a 400 naming the envelope, GET still serves the state of
// the first lineage and the history is untouched; OpenTofu's real envelope
// is still stored as an opaque version.
func TestEncryptionVersionInPlaintext(t *testing.T) {
	eachEnv(t, Options{}, func(t *testing.T, env *testEnv) {
		ours := stateDoc(t, "aaaa", 1, map[string]string{"web": "a"})
		env.post("prod", "", ours)
		history := func() []kilolock.Version {
			h, err := env.engine.History(t.Context(), "prod", kilolock.HistoryOptions{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		before := history()

		for _, doc := range []string{
			`{"version":4,"serial":0,"lineage":"bbbb","resources":[],"encryption_version":"v0"}`,
			`{"version":4,"serial":5,"lineage":"aaaa","resources":[],"ENCRYPTION_VERSION":"v0"}`,
			`{"serial":5,"lineage":"bbbb","meta":{},"encrypted_data":"c2VjcmV0","encryption_version":"v0","resources":[]}`,
		} {
			w := env.do("POST", "/v1/states/prod", []byte(doc))
			if e := errorOf(t, w); w.Code != http.StatusBadRequest || e.Error != "ambiguous_encryption" || !strings.Contains(e.Hint, "encrypted_data") {
				t.Errorf("POST %s = %d %s; want 400 ambiguous_encryption", doc, w.Code, w.Body)
			}
		}
		if got := env.do("GET", "/v1/states/prod", nil).Body.Bytes(); !bytes.Equal(got, ours) {
			t.Errorf("GET after the refused writes = %s, want the state of lineage aaaa", got)
		}
		if diff := cmp.Diff(before, history()); diff != "" {
			t.Errorf("history changed (-before +after):\n%s", diff)
		}

		// The envelope OpenTofu writes (serial and lineage passed
		// through, meta, base64 data, version) is opaque.
		envelope := []byte(`{"serial":2,"lineage":"aaaa","meta":{"key_provider.pbkdf2.k":"eyJzYWx0IjoiIn0="},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`)
		env.post("prod", "", envelope)
		if got := env.do("GET", "/v1/states/prod", nil).Body.Bytes(); !bytes.Equal(got, envelope) {
			t.Errorf("GET after the envelope = %s, want its bytes", got)
		}
		if v := history()[0]; v.Format != kilolock.FormatOpaque {
			t.Errorf("the envelope's version has format %q, want opaque", v.Format)
		}
	})
}

// TestJSONTypesNamedAsJSON: a JSON API body of the wrong shape, or a
// field of the wrong type, is a 400 malformed_json that says what JSON
// was expected, as the client writes it, never a Go type of the server's
// ("httpbackend.stateConfig", "bool").
func TestJSONTypesNamedAsJSON(t *testing.T) {
	env := newEnv(t, "", Options{})
	for _, tt := range []struct{ method, path, body, message string }{
		{"POST", "/v1/api/states/prod/config", `[1]`, "the body must be a JSON object, not array"},
		{"POST", "/v1/api/states/prod/config", `"on"`, "the body must be a JSON object, not string"},
		{"POST", "/v1/api/states/prod/config", `{"require_client_encryption":"yes"}`, `field "require_client_encryption" must be a boolean, not string`},
		{"PUT", "/v1/api/retention/policies", `{"scope":5}`, `field "scope" must be a string, not number`},
		{"PUT", "/v1/api/retention/policies", `{"scope":"state","target":"net","keep_last":"3"}`, `field "keep_last" must be an integer, not string`},
	} {
		w := env.do(tt.method, tt.path, []byte(tt.body))
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s %s %s: %d %s, want 400", tt.method, tt.path, tt.body, w.Code, w.Body)
			continue
		}
		if e := errorOf(t, w); e.Error != "malformed_json" || e.Message != tt.message || strings.Contains(w.Body.String(), "httpbackend.") {
			t.Errorf("%s %s %s: %s, want malformed_json %q", tt.method, tt.path, tt.body, w.Body, tt.message)
		}
	}
}

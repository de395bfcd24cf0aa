package httpbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
)

func TestAPI(t *testing.T) {
	env := newEnv(t, "", Options{})
	v1 := stateDoc(t, "lineage-1", 1, map[string]string{"web": "a", "db": "a"})
	v2 := stateDoc(t, "lineage-1", 2, map[string]string{"web": "b", "db": "a"})
	env.post("prod", "", v1)
	env.post("prod", "", v2)
	env.lock("staging", lockInfo("11111111-aaaa", "alice"))

	t.Run("states", func(t *testing.T) {
		var got struct{ States []kilolock.State }
		decode(t, env.do("GET", "/v1/api/states", nil), &got)
		if len(got.States) != 2 || got.States[0].Name != "prod" || got.States[1].Name != "staging" || len(got.States[1].Locks) != 1 {
			t.Errorf("states = %+v", got.States)
		}
	})
	t.Run("status", func(t *testing.T) {
		var got kilolock.Status
		decode(t, env.do("GET", "/v1/api/states/prod", nil), &got)
		if got.Name != "prod" || got.Version == nil || got.Version.Number != 2 || got.Instances != 2 {
			t.Errorf("status = %+v", got)
		}
		if w := env.do("GET", "/v1/api/states/nope", nil); w.Code != http.StatusNotFound || errorOf(t, w).Error != "not_found" {
			t.Errorf("status of an unknown state: %d %s", w.Code, w.Body)
		}
	})
	t.Run("versions", func(t *testing.T) {
		var got struct{ Versions []kilolock.Version }
		decode(t, env.do("GET", "/v1/api/states/prod/versions", nil), &got)
		if len(got.Versions) != 2 || got.Versions[0].Number != 2 || got.Versions[1].Number != 1 {
			t.Errorf("versions = %+v", got.Versions)
		}
		decode(t, env.do("GET", "/v1/api/states/prod/versions?limit=1&before=2", nil), &got)
		if len(got.Versions) != 1 || got.Versions[0].Number != 1 {
			t.Errorf("versions?limit=1&before=2 = %+v", got.Versions)
		}
	})
	t.Run("version document", func(t *testing.T) {
		w := env.do("GET", "/v1/api/states/prod/versions/1", nil)
		if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), v1) {
			t.Errorf("version 1: %d, want its bytes back", w.Code)
		}
		if w := env.do("GET", "/v1/api/states/prod/versions/9", nil); w.Code != http.StatusNotFound {
			t.Errorf("version 9: %d, want 404", w.Code)
		}
	})
	t.Run("query", func(t *testing.T) {
		var got kilolock.QueryResult
		decode(t, env.do("POST", "/v1/api/query", []byte(`{"sql": "SELECT 1 AS one"}`)), &got)
		if len(got.Columns) != 1 || got.Columns[0] != "one" || len(got.Rows) != 1 {
			t.Errorf("query = %+v", got)
		}
	})
	t.Run("health", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if w := env.do("GET", path, nil); w.Code != http.StatusOK {
				t.Errorf("%s: %d %s", path, w.Code, w.Body)
			}
		}
		var v VersionInfo
		decode(t, env.do("GET", "/versionz", nil), &v)
		if v.Version == "" || v.GoVersion == "" {
			t.Errorf("versionz = %+v", v)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		body := env.do("GET", "/metrics", nil).Body.String()
		for _, want := range []string{
			`kl_http_requests_total{method="POST",route="/v1/states/{name}",status="200"} 2`,
			`kl_http_request_duration_seconds_bucket{route="/v1/states/{name}",le="+Inf"} 3`, // 2 POSTs and a LOCK,
			`kl_commits_total{source="push"} 2`,
			"# TYPE kl_http_request_duration_seconds histogram",
			"kl_commit_rows_total ",
			"kl_commit_bytes_total ",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %q:\n%s", want, body)
			}
		}
	})
}

func TestReadyzDatabaseDown(t *testing.T) {
	env := newEnv(t, "", Options{Ready: func(context.Context) error { return errors.New("connection refused") }})
	w := env.do("GET", "/readyz", nil)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("readyz with the database down: %d Retry-After %q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if e := errorOf(t, w); e.Error != "unavailable" {
		t.Errorf("error = %q", e.Error)
	}
	if w := env.do("GET", "/healthz", nil); w.Code != http.StatusOK {
		t.Errorf("healthz with the database down: %d, want 200", w.Code)
	}
}

func TestPanicIsA500(t *testing.T) {
	env := newEnv(t, "", Options{Ready: func(context.Context) error { panic("boom") }})
	w := env.do("GET", "/readyz", nil)
	if w.Code != http.StatusInternalServerError || errorOf(t, w).Error != "internal" {
		t.Fatalf("a panic: %d %s, want 500 internal", w.Code, w.Body)
	}
	if logs := env.logs.String(); !strings.Contains(logs, "boom") || !strings.Contains(logs, "goroutine") {
		t.Errorf("the panic and its stack were not logged:\n%s", logs)
	}
	if w.Header().Get("X-Request-Id") == "" {
		t.Errorf("no X-Request-Id")
	}
}

func TestRequestLog(t *testing.T) {
	env := newEnv(t, "", Options{})
	a := lockInfo("11111111-aaaa", "alice")
	env.do("LOCK", "/v1/states/prod", mustJSON(t, a), "X-Request-Id", "req-42")
	line := ""
	for l := range strings.Lines(env.logs.String()) {
		if strings.Contains(l, "req-42") {
			line = l
		}
	}
	for _, want := range []string{"method=LOCK", "path=/v1/states/prod", "status=200", "lock_id=" + a.ID, "duration=", "bytes_out="} {
		if !strings.Contains(line, want) {
			t.Errorf("request log line %q lacks %q", line, want)
		}
	}
}

func decode(t testing.TB, w interface {
	Result() *http.Response
}, v any) {
	t.Helper()
	res := w.Result()
	if res.StatusCode != http.StatusOK {
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b.String())
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatalf("decode: %v", err)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

const token = "s3cret"

// startService runs the service's handler on a fresh SQLite store.
func startService(t *testing.T) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "embed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	logger := log.New(io.Discard)
	srv := httptest.NewServer(newHandler(kilolock.NewEngine(s, kilolock.Options{Logger: logger}), token, logger))
	t.Cleanup(srv.Close)
	return srv
}

// call sends one request; auth is "basic", "bearer", "wrong" or "" (none).
func call(t *testing.T, method, url, auth string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch auth {
	case "basic":
		req.SetBasicAuth("terraform", token)
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+token)
	case "wrong":
		req.SetBasicAuth("terraform", "not-the-token")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

const stateDoc = `{
  "version": 4,
  "terraform_version": "1.10.10",
  "serial": 1,
  "lineage": "0f5e1d64-7c1b-4c36-9a3e-6f0c9f2d7a11",
  "outputs": {
    "endpoint": {
      "value": "https://demo.example.com",
      "type": "string"
    },
    "password": {
      "value": "hunter2",
      "type": "string",
      "sensitive": true
    },
    "ports": {
      "value": [
        80,
        443
      ],
      "type": [
        "list",
        "number"
      ]
    }
  },
  "resources": [
    {
      "mode": "managed",
      "type": "terraform_data",
      "name": "web",
      "provider": "provider[\"terraform.io/builtin/terraform\"]",
      "instances": [
        {
          "schema_version": 0,
          "attributes": {
            "id": "8d3e1b5a-2f6c-4e7d-9a1b-3c5d7e9f1a2b",
            "input": null,
            "output": null,
            "triggers_replace": null
          },
          "sensitive_attributes": []
        }
      ]
    }
  ],
  "check_results": null
}
`

func TestService(t *testing.T) {
	srv := startService(t)
	stateURL := srv.URL + prefix + "/v1/states/demo"

	t.Run("credentials are required", func(t *testing.T) {
		for _, tc := range []struct{ method, url, auth string }{
			{"GET", stateURL, ""},
			{"LOCK", stateURL, ""},
			{"GET", stateURL, "wrong"},
			{"GET", srv.URL + "/outputs/demo", ""},
			{"GET", srv.URL + prefix + "/v1/api/states", ""},
		} {
			code, body := call(t, tc.method, tc.url, tc.auth, nil)
			if code != http.StatusUnauthorized {
				t.Errorf("%s %s (auth %q): status %d, want 401: %s", tc.method, tc.url, tc.auth, code, body)
			}
		}
	})

	// Write the state as terraform does: LOCK, POST with the lock id, UNLOCK.
	lock, _ := json.Marshal(kilolock.LockInfo{ID: "3b1f2c4d-0000-4000-8000-000000000001", Operation: "OperationTypeApply", Who: "ci@runner", Version: "1.10.10", Path: ""})
	if code, body := call(t, "LOCK", stateURL, "basic", lock); code != http.StatusOK {
		t.Fatalf("LOCK: %d %s", code, body)
	}
	if code, body := call(t, "POST", stateURL+"?ID=3b1f2c4d-0000-4000-8000-000000000001", "basic", []byte(stateDoc)); code != http.StatusOK {
		t.Fatalf("POST: %d %s", code, body)
	}
	if code, body := call(t, "UNLOCK", stateURL, "basic", lock); code != http.StatusOK {
		t.Fatalf("UNLOCK: %d %s", code, body)
	}
	if code, body := call(t, "GET", stateURL, "basic", nil); code != http.StatusOK || string(body) != stateDoc {
		t.Fatalf("GET: %d, body equal to the posted one: %v\n%s", code, string(body) == stateDoc, body)
	}

	t.Run("outputs", func(t *testing.T) {
		code, body := call(t, "GET", srv.URL+"/outputs/demo", "bearer", nil)
		if code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
		var got outputsBody
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if got.State != "demo" || got.Version != 1 || got.Serial != 1 || len(got.Outputs) != 3 {
			t.Fatalf("got %s", body)
		}
		for name, want := range map[string]outputValue{
			"endpoint": {Value: json.RawMessage(`"https://demo.example.com"`), Type: json.RawMessage(`"string"`)},
			"ports":    {Value: json.RawMessage(`[80,443]`), Type: json.RawMessage(`["list","number"]`)},
			"password": {Type: json.RawMessage(`"string"`), Sensitive: true},
		} {
			out := got.Outputs[name]
			if string(out.Value) != string(want.Value) || string(out.Type) != string(want.Type) || out.Sensitive != want.Sensitive {
				t.Errorf("output %s = %+v, want %+v", name, out, want)
			}
		}
		if bytes.Contains(body, []byte("hunter2")) {
			t.Errorf("a sensitive value leaked: %s", body)
		}
	})

	t.Run("unknown state", func(t *testing.T) {
		if code, body := call(t, "GET", srv.URL+"/outputs/nope", "bearer", nil); code != http.StatusNotFound {
			t.Errorf("status %d, want 404: %s", code, body)
		}
	})
}

func TestRunNeedsToken(t *testing.T) {
	err := run(context.Background(), config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "x.db")}, log.New(io.Discard))
	if err == nil {
		t.Fatal("run without a token succeeded")
	}
}

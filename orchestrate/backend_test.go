package orchestrate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
)

func TestParseStateAddress(t *testing.T) {
	for _, tc := range []struct {
		addr, server, state, bad string
	}{
		{addr: "http://127.0.0.1:8080/v1/states/big-state", server: "http://127.0.0.1:8080", state: "big-state"},
		{addr: "https://kl.example.com/prefix/v1/states/app", server: "https://kl.example.com/prefix", state: "app"},
		{addr: "https://kl.example.com/v1/states/ws_1a2b/env_3c4d/net", server: "https://kl.example.com", state: "ws_1a2b.env_3c4d.net"},
		{addr: "http://127.0.0.1:8080/v1/states/app?x=1", server: "http://127.0.0.1:8080", state: "app"},
		{addr: "http://127.0.0.1:8080/state/app", bad: "no /v1/states/"},
		{addr: "s3://bucket/key", bad: "not an http(s) URL"},
		{addr: "", bad: "not an http(s) URL"},
		{addr: "http://h/v1/states/a/b", bad: "/v1/states/NAME or"},
		{addr: "http://h/v1/states/ws_x/staging/net", bad: "not a workspace and environment id"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			server, state, err := ParseStateAddress(tc.addr)
			if tc.bad != "" {
				var ue *kilolock.InvalidError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.bad) || ue.Hint == "" {
					t.Fatalf("ParseStateAddress(%q) = %q, %q, %v; want a usage error saying %q", tc.addr, server, state, err, tc.bad)
				}
				return
			}
			if err != nil || server != tc.server || state != tc.state {
				t.Fatalf("ParseStateAddress(%q) = %q, %q, %v; want %q, %q", tc.addr, server, state, err, tc.server, tc.state)
			}
		})
	}
}

func TestReadTFBackend(t *testing.T) {
	write := func(t *testing.T, content string) string {
		t.Helper()
		dir := t.TempDir()
		if content != "" {
			if err := os.Mkdir(filepath.Join(dir, ".terraform"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".terraform", "terraform.tfstate"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Run("http backend", func(t *testing.T) {
		dir := write(t, `{"version":3,"backend":{"type":"http","config":{"address":"http://127.0.0.1:8080/v1/states/demo","lock_address":"http://127.0.0.1:8080/v1/states/demo","username":"ws_1","password":"klt_x","retry_max":2,"skip_cert_verification":false,"client_ca_certificate_pem":null},"hash":1}}`)
		b, err := ReadTFBackend(dir)
		if err != nil {
			t.Fatal(err)
		}
		if b.Server != "http://127.0.0.1:8080" || b.State != "demo" {
			t.Fatalf("ReadTFBackend = %+v", b)
		}
		args, err := backendConfigArgs(b.Config, "run_0123456789abcdef")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"address=http://127.0.0.1:8080/v1/states/demo?run=run_0123456789abcdef",
			"lock_address=http://127.0.0.1:8080/v1/states/demo?run=run_0123456789abcdef",
			"password=klt_x",
			"retry_max=2",
			"skip_cert_verification=false",
			// No unlock_address was configured: the run's CLI must still
			// lock and unlock, on the state's address.
			"unlock_address=http://127.0.0.1:8080/v1/states/demo?run=run_0123456789abcdef",
			"username=ws_1",
		}
		if !slices.Equal(args, want) {
			t.Fatalf("backendConfigArgs =\n%s\nwant\n%s", strings.Join(args, "\n"), strings.Join(want, "\n"))
		}
	})
	for _, tc := range []struct{ name, content, want string }{
		{"not initialized", "", "is not initialized"},
		{"s3 backend", `{"backend":{"type":"s3","config":{"bucket":"b"}}}`, `is "s3", not`},
		{"local state", `{"version":3}`, `is "none", not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadTFBackend(write(t, tc.content))
			var ue *kilolock.InvalidError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(ue.Hint, "--server") {
				t.Fatalf("ReadTFBackend = %v; want a usage error saying %q with a hint naming --server", err, tc.want)
			}
		})
	}
}

// TestBackendConfigArgs: the scratch init of an orchestrated apply keeps
// the user's backend configuration (credentials, methods, flags) and
// points its three addresses at the run, lock and unlock addresses
// defaulting to the state's address so that the CLI locks as the run.
func TestBackendConfigArgs(t *testing.T) {
	cfg := map[string]any{
		"address":                "https://kl.example.com/v1/states/app?x=1",
		"lock_method":            "LOCK",
		"username":               "ws_1",
		"password":               "s3cret",
		"skip_cert_verification": true,
		"retry_max":              float64(3),
		"unset":                  nil,
		"empty":                  "",
	}
	args, err := backendConfigArgs(cfg, "run_42")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"address=https://kl.example.com/v1/states/app?run=run_42&x=1",
		"lock_address=https://kl.example.com/v1/states/app?run=run_42&x=1",
		"lock_method=LOCK",
		"password=s3cret",
		"retry_max=3",
		"skip_cert_verification=true",
		"unlock_address=https://kl.example.com/v1/states/app?run=run_42&x=1",
		"username=ws_1",
	}
	if !slices.Equal(args, want) {
		t.Fatalf("backendConfigArgs =\n%q\nwant\n%q", args, want)
	}
}

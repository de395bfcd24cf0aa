package tofu_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

func TestWorkdirLocalState(t *testing.T) {
	// The machine's tofu/terraform environment must not reach the
	// commands: a CLI config that does not exist, trace logging, extra
	// flags.
	t.Setenv("TF_CLI_CONFIG_FILE", "/nonexistent/tofurc")
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_CLI_ARGS_apply", "-no-such-flag")

	for _, tc := range []struct {
		kind    tofu.Kind
		version string // the first line of `version` starts with it
	}{
		{tofu.OpenTofu, "OpenTofu v1.10."},
		{tofu.Terraform, "Terraform v1.5.7"},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			wd := tc.kind.NewWorkdir(t, `
resource "terraform_data" "n" {
  count = 2
  input = count.index
}
output "first" { value = terraform_data.n[0].output }
`)
			if v := tc.kind.Version(t); !strings.HasPrefix(v, tc.version) {
				t.Errorf("version = %q, want %s…", v, tc.version)
			}
			if wd.Kind() != tc.kind {
				t.Errorf("Kind() = %v, want %v", wd.Kind(), tc.kind)
			}
			wd.Must("init", "-no-color")
			_, stderr, code := wd.Run("apply", "-auto-approve", "-no-color")
			if code != 0 {
				t.Fatalf("apply: exit %d\n%s", code, stderr)
			}
			if strings.Contains(stderr, "[TRACE]") {
				t.Errorf("TF_LOG leaked into the command:\n%.500s", stderr)
			}
			got := strings.Fields(wd.Must("state", "list"))
			want := []string{"terraform_data.n[0]", "terraform_data.n[1]"}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("state list = %q, want %q", got, want)
			}
			if !strings.Contains(wd.ReadFile("terraform.tfstate"), `"lineage"`) {
				t.Errorf("no local state written")
			}
			if _, _, code := wd.Run("plan", "-detailed-exitcode", "-no-color"); code != 0 {
				t.Errorf("plan after apply: exit %d, want 0 (no changes)", code)
			}
		})
	}
}

// TestCLIConfigFile: each CLI's configuration takes hashicorp/time from
// the mirror at the registry host that CLI resolves it at, and nothing
// else from the network.
func TestCLIConfigFile(t *testing.T) {
	cache := t.TempDir()
	if err := os.Mkdir(filepath.Join(cache, "mirror"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(tofu.EnvTofuCache, cache)
	for _, k := range []tofu.Kind{tofu.OpenTofu, tofu.Terraform} {
		t.Run(k.String(), func(t *testing.T) {
			b, err := os.ReadFile(k.CLIConfigFile(t))
			if err != nil {
				t.Fatal(err)
			}
			rc := string(b)
			want := k.Registry() + "/hashicorp/time"
			if strings.Count(rc, `"`+want+`"`) != 2 || !strings.Contains(rc, filepath.Join(cache, "mirror")) {
				t.Errorf("the CLI config of %s does not take %s from the mirror (and only there):\n%s", k, want, rc)
			}
		})
	}
}

func TestBackendBlock(t *testing.T) {
	var s tofu.Server
	s.URL = "http://127.0.0.1:8080"
	want := `terraform {
  backend "http" {
    address        = "http://127.0.0.1:8080/v1/states/example"
    lock_address   = "http://127.0.0.1:8080/v1/states/example"
    unlock_address = "http://127.0.0.1:8080/v1/states/example"
    lock_method    = "LOCK"
    unlock_method  = "UNLOCK"
  }
}
`
	if got := s.Backend("example"); got != want {
		t.Errorf("Backend:\n%s\nwant:\n%s", got, want)
	}
}

package tofu_test

import (
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

func TestWorkdirLocalState(t *testing.T) {
	// The machine's tofu environment must not reach the commands: a CLI
	// config that does not exist, trace logging, extra flags.
	t.Setenv("TF_CLI_CONFIG_FILE", "/nonexistent/tofurc")
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_CLI_ARGS_apply", "-no-such-flag")

	wd := tofu.NewWorkdir(t, `
resource "terraform_data" "n" {
  count = 2
  input = count.index
}
output "first" { value = terraform_data.n[0].output }
`)
	t.Logf("using %s", tofu.Version(t))
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

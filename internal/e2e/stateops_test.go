package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// opsConfig is two terraform_data resources; with inModule, x lives in
// module.demo (./modules/demo) instead of the root module.
func opsConfig(backend, y string, inModule bool) string {
	x := `resource "terraform_data" "x" {
  input = "x-v1"
}
`
	if inModule {
		x = `module "demo" {
  source = "./modules/demo"
}
`
	}
	return backend + x + fmt.Sprintf(`
resource "terraform_data" "y" {
  input = %q
}
`, y)
}

// resourceKeys lists a state document's resources as module/mode.type.name
// with their instances, for comparing content regardless of serial.
func resourceKeys(t *testing.T, doc []byte) []string {
	t.Helper()
	var s struct {
		Resources []struct {
			Module    string            `json:"module"`
			Mode      string            `json:"mode"`
			Type      string            `json:"type"`
			Name      string            `json:"name"`
			Instances []json.RawMessage `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatalf("state: %v", err)
	}
	var out []string
	for _, r := range s.Resources {
		for _, in := range r.Instances {
			var attrs struct {
				Attributes json.RawMessage `json:"attributes"`
			}
			json.Unmarshal(in, &attrs)
			out = append(out, fmt.Sprintf("%s %s.%s.%s %s", r.Module, r.Mode, r.Type, r.Name, attrs.Attributes))
		}
	}
	slices.Sort(out)
	return out
}

// TestStateOpsWithTofu proves kl state rm, state mv, rollback and
// export/import against the real OpenTofu, on SQLite.
func TestStateOpsWithTofu(t *testing.T) {
	t.Parallel()
	tofu.Binary(t)
	db := filepath.Join(t.TempDir(), "kilolock.db")
	srv := setup(t, db)
	backend := srv.Backend("ops")
	server := []string{"--server", srv.URL}
	database := []string{"--database", db}
	klArgs := func(mode []string, args ...string) []string { return append(slices.Clone(mode), args...) }

	wd := tofu.NewWorkdir(t, opsConfig(backend, "y-v1", false))
	wd.Must("init", "-no-color")
	wd.Must("apply", "-auto-approve", "-no-color")

	// state rm: tofu plans to create the removed resource again.
	out := mustKL(t, klArgs(server, "state", "rm", "ops", "--address", "terraform_data.y")...)
	if !strings.Contains(out, "- terraform_data.y") {
		t.Errorf("kl state rm:\n%s", out)
	}
	stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color")
	if code != 2 || !strings.Contains(stdout, "1 to add") {
		t.Fatalf("plan after state rm: exit %d, want 2 with 1 to add\n%s\n%s", code, stdout, stderr)
	}
	wd.Must("apply", "-auto-approve", "-no-color")

	// state mv into a module, with the matching configuration: no changes.
	out = mustKL(t, klArgs(database, "state", "mv", "ops", "terraform_data.x", "module.demo.terraform_data.x", "--dry-run")...)
	if !strings.Contains(out, "Dry run") {
		t.Errorf("kl state mv --dry-run:\n%s", out)
	}
	mustKL(t, klArgs(database, "state", "mv", "ops", "terraform_data.x", "module.demo.terraform_data.x")...)
	if err := os.MkdirAll(filepath.Join(wd.Dir, "modules", "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	wd.WriteFile("modules/demo/main.tf", "resource \"terraform_data\" \"x\" {\n  input = \"x-v1\"\n}\n")
	wd.WriteFile("main.tf", opsConfig(backend, "y-v1", true))
	wd.Must("init", "-no-color")
	stdout, stderr, code = wd.Run("plan", "-detailed-exitcode", "-no-color")
	if code != 0 {
		t.Fatalf("plan after state mv into module.demo: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}

	// Rollback: change y, roll back to the version before, apply again.
	target := history(t, srv, "ops")[0]
	wd.WriteFile("main.tf", opsConfig(backend, "y-v2", true))
	wd.Must("apply", "-auto-approve", "-no-color")
	before := history(t, srv, "ops")[0]
	ref := "@" + strconv.FormatInt(target.Number, 10)
	out = mustKL(t, klArgs(server, "rollback", "ops", "--to", ref)...)
	if !strings.Contains(out, "does not roll back infrastructure") || !strings.Contains(out, "dry run") {
		t.Errorf("kl rollback dry run:\n%s", out)
	}
	t.Logf("rollback dry run:\n%s", out)
	if _, errOut, code := kl(t, klArgs(server, "rollback", "ops", "--to", ref, "--apply")...); code != 2 || !strings.Contains(errOut, "--yes") {
		t.Errorf("kl rollback --apply without --yes: exit %d\n%s", code, errOut)
	}
	mustKL(t, klArgs(server, "rollback", "ops", "--to", ref, "--apply", "--yes")...)
	pulled := []byte(wd.Must("state", "pull"))
	want := []byte(mustKL(t, klArgs(database, "export", "ops", ref)...))
	if got, w := resourceKeys(t, pulled), resourceKeys(t, want); !slices.Equal(got, w) {
		t.Errorf("state after rollback:\n%s\nwant %s's:\n%s", strings.Join(got, "\n"), ref, strings.Join(w, "\n"))
	}
	if s := parseState(t, pulled).Serial; s != before.Serial+1 {
		t.Errorf("serial after rollback = %d, want %d", s, before.Serial+1)
	}
	if v := history(t, srv, "ops")[0]; v.Source != "rollback" {
		t.Errorf("newest version after rollback: %+v", v)
	}
	wd.Must("apply", "-auto-approve", "-no-color")
	wd.Must("plan", "-detailed-exitcode", "-no-color")

	// export, then tofu state push into a fresh state: the same state list.
	exported := mustKL(t, klArgs(server, "export", "ops")...)
	fresh := tofu.NewWorkdir(t, opsConfig(srv.Backend("ops-copy"), "y-v2", true))
	if err := os.MkdirAll(filepath.Join(fresh.Dir, "modules", "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	fresh.WriteFile("modules/demo/main.tf", wd.ReadFile("modules/demo/main.tf"))
	fresh.WriteFile("exported.tfstate", exported)
	fresh.Must("init", "-no-color")
	fresh.Must("state", "push", "exported.tfstate")
	if a, b := stateList(t, wd), stateList(t, fresh); !slices.Equal(a, b) || len(a) != 2 {
		t.Errorf("state list after export and push: %v, original %v", b, a)
	}
	fresh.Must("plan", "-detailed-exitcode", "-no-color")

	// kl import: the exported file into a third state, then history shows it.
	fresh.WriteFile("exported.tfstate", exported)
	out = mustKL(t, klArgs(database, "import", "ops-imported", filepath.Join(fresh.Dir, "exported.tfstate"))...)
	if !strings.Contains(out, "as version @1") {
		t.Errorf("kl import:\n%s", out)
	}
	out = mustKL(t, klArgs(server, "history", "ops", "--address", "terraform_data.y")...)
	if !strings.Contains(out, "terraform_data.y") || !strings.Contains(out, "attributes.input") {
		t.Errorf("kl history --address:\n%s", out)
	}
}

package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestImportSizesAndStateSettings: kl import says how many bytes it read
// (as ls -l counts them) apart from what it stored; kl state config NAME
// without a flag shows the settings, each with the flag that changes it,
// and shows a change. Both stores.
func TestImportSizesAndStateSettings(t *testing.T) {
	file := filepath.Join(tofu.ModuleRoot(t), "docs", "queries", "testdata", "prod-2.tfstate")
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := tofu.StartKLD(t, s.url(t))
			k := func(args ...string) string { return mustKL(t, append([]string{"--server", srv.URL}, args...)...) }
			out := k("import", "prod", file)
			if !strings.Contains(out, fmt.Sprintf("read %d bytes (", fi.Size())) || !strings.Contains(out, "stored ") {
				t.Errorf("kl import of a %d-byte file:\n%s", fi.Size(), out)
			}

			settings := k("state", "config", "prod")
			for _, want := range []string{"lock mode exclusive", "--exclusive-locks=true|false", "allow lineage change false", "require client encryption false"} {
				if !strings.Contains(flat(settings), want) {
					t.Errorf("kl state config prod does not show %q:\n%s", want, settings)
				}
			}
			k("state", "config", "prod", "--exclusive-locks=false")
			var js struct {
				LockMode string `json:"lock_mode"`
			}
			if out := k("state", "config", "prod", "--json"); json.Unmarshal([]byte(out), &js) != nil || js.LockMode != "optimistic" {
				t.Errorf("kl state config prod --json after --exclusive-locks=false:\n%s", out)
			}
			// --json before the command, as a global flag.
			if out := mustKL(t, "--json", "--server", srv.URL, "state", "config", "prod"); json.Unmarshal([]byte(out), &js) != nil || js.LockMode != "optimistic" {
				t.Errorf("kl --json state config prod:\n%s", out)
			}
			if _, errOut, code := kl(t, "--server", srv.URL, "state", "config", "nope"); code != 3 {
				t.Errorf("kl state config of a missing state: exit %d, want 3\n%s", code, errOut)
			}
		})
	}
}

// TestMissingStateWarned: --state naming no state is no longer accepted
// silently: kl quota set, quota remaining and retention set go on (a limit
// or a policy may come before the first write) and warn on stderr; a state
// that exists draws no warning. Both stores.
func TestMissingStateWarned(t *testing.T) {
	file := filepath.Join(tofu.ModuleRoot(t), "docs", "queries", "testdata", "prod-1.tfstate")
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			db := s.url(t)
			mustKL(t, "--database", db, "import", "prod", file)
			for _, args := range [][]string{
				{"quota", "set", "--state", "%s", "--hard", "5"},
				{"quota", "remaining", "--state", "%s"},
				{"retention", "set", "--state", "%s", "--keep-last", "3"},
			} {
				for _, name := range []string{"prod", "prdo"} {
					a := append([]string{"--database", db}, args...)
					for i := range a {
						a[i] = strings.ReplaceAll(a[i], "%s", name)
					}
					_, errOut, code := kl(t, a...)
					warned := strings.Contains(errOut, "state "+name+" does not exist")
					if code != 0 || warned != (name == "prdo") {
						t.Errorf("kl %s: exit %d, warned %v\n%s", strings.Join(a, " "), code, warned, errOut)
					}
				}
			}
		})
	}
}

// TestStateMvRmTofuForms: kl state mv NAME SRC DST and kl state rm NAME
// ADDR… take their addresses as tofu state mv and rm do; --from/--to still
// work with a deprecation warning, --address as before. Both stores.
func TestStateMvRmTofuForms(t *testing.T) {
	file := filepath.Join(tofu.ModuleRoot(t), "docs", "queries", "testdata", "prod-1.tfstate")
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := tofu.StartKLD(t, s.url(t))
			k := func(args ...string) string { return mustKL(t, append([]string{"--server", srv.URL}, args...)...) }
			k("import", "prod", file)
			dry := k("state", "mv", "prod", "aws_instance.web", "module.app.aws_instance.web", "--dry-run")
			if !strings.Contains(dry, "module.app.aws_instance.web") {
				t.Errorf("kl state mv NAME SRC DST --dry-run:\n%s", dry)
			}
			out, errOut, code := kl(t, "--server", srv.URL, "state", "mv", "prod", "--from", "aws_instance.web", "--to", "module.app.aws_instance.web", "--dry-run")
			if code != 0 || out != dry || !strings.Contains(errOut, "deprecated") {
				t.Errorf("kl state mv --from --to: exit %d\n%s\n%s", code, out, errOut)
			}
			k("state", "mv", "prod", "aws_instance.web", "module.app.aws_instance.web")
			if list := k("state", "list", "prod"); !strings.Contains(list, "module.app.aws_instance.web") {
				t.Errorf("after kl state mv:\n%s", list)
			}
			k("state", "rm", "prod", "module.app.aws_instance.web")
			k("state", "rm", "prod", "--address", "aws_iam_role.app")
			if list := k("state", "list", "prod"); strings.Contains(list, "aws_instance.web") || strings.Contains(list, "aws_iam_role.app") {
				t.Errorf("after kl state rm:\n%s", list)
			}
			if _, errOut, code := kl(t, "--server", srv.URL, "state", "rm", "prod"); code != 2 || !strings.Contains(errOut, "address") {
				t.Errorf("kl state rm without an address: exit %d\n%s", code, errOut)
			}
		})
	}
}

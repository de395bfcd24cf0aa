package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestRollbackCLI: kl --help and kl rollback --help show the whole-state
// rollback and its flags; a dry run says what would happen, a written
// rollback what did; kl rollback resource takes NAME ADDR as arguments, the
// old --state and --address still working with a deprecation warning.
// Both stores.
func TestRollbackCLI(t *testing.T) {
	help, _, _ := kl(t, "--help")
	if !strings.Contains(help, "rollback state --to=REF <name>") {
		t.Errorf("kl --help does not show the whole-state rollback:\n%s", help)
	}
	rb, _, _ := kl(t, "rollback", "--help")
	for _, want := range []string{"kl rollback prod --to @3", "rollback resource --to=REF [<name> [<address>]]"} {
		if !strings.Contains(flat(rb), want) {
			t.Errorf("kl rollback --help does not show %q:\n%s", want, rb)
		}
	}
	if rs, _, _ := kl(t, "rollback", "state", "--help"); !strings.Contains(rs, "--apply") || !strings.Contains(rs, "--to=REF") {
		t.Errorf("kl rollback state --help shows no flags:\n%s", rs)
	}
	testdata := filepath.Join(tofu.ModuleRoot(t), "docs", "queries", "testdata")
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := tofu.StartKLD(t, s.url(t))
			k := func(args ...string) string { return mustKL(t, append([]string{"--server", srv.URL}, args...)...) }
			k("import", "prod", filepath.Join(testdata, "prod-1.tfstate"))
			k("import", "prod", filepath.Join(testdata, "prod-2.tfstate"))

			dry := k("rollback", "prod", "--to", "@1")
			if !strings.Contains(dry, "would") || !strings.Contains(dry, "Dry run: nothing was changed. To do it: kl rollback") {
				t.Errorf("dry run:\n%s", dry)
			}
			res := k("rollback", "resource", "prod", "aws_instance.web", "--to", "@1")
			if !strings.Contains(res, "kl rollback resource prod aws_instance.web --to @1 --apply --yes") {
				t.Errorf("a resource's dry run does not name the command to apply it:\n%s", res)
			}
			out, errOut, code := kl(t, "--server", srv.URL, "rollback", "resource", "--state", "prod", "--address", "aws_instance.web", "--to", "@1")
			if code != 0 || out != res || !strings.Contains(errOut, "deprecated") {
				t.Errorf("the deprecated flags: exit %d\n%s\n%s", code, out, errOut)
			}
			if _, errOut, code := kl(t, "--server", srv.URL, "rollback", "resource", "prod", "--to", "@1"); code != 2 || !strings.Contains(errOut, "missing the address") {
				t.Errorf("a resource rollback without an address: exit %d\n%s", code, errOut)
			}

			done := k("rollback", "prod", "--to", "1", "--apply", "--yes")
			if strings.Contains(done, "would") || !strings.Contains(done, "Rolled back as new version @3") || !strings.Contains(done, "(applied)") {
				t.Errorf("a written rollback still speaks of what it would do:\n%s", done)
			}
		})
	}
}

package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestVersionRefsEverywhere checks the one convention of versions through
// the real kl: every command that takes a version (state pull, graph,
// show, diff, export, rollback) reads @N, a bare N, serial:S, @-K, a tag
// and latest alike, as a positional REF and as --version REF. Both stores.
func TestVersionRefsEverywhere(t *testing.T) {
	root := tofu.ModuleRoot(t)
	testdata := filepath.Join(root, "docs", "queries", "testdata")
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := tofu.StartKLD(t, s.url(t))
			k := func(args ...string) string { return mustKL(t, append([]string{"--server", srv.URL}, args...)...) }
			k("import", "prod", filepath.Join(testdata, "prod-1.tfstate"))
			k("import", "prod", filepath.Join(testdata, "prod-2.tfstate"))
			k("tag", "set", "prod", "first", "@1")
			first, latest := k("state", "pull", "prod", "@1"), k("state", "pull", "prod")
			if first == latest {
				t.Fatal("@1 and the current version pull alike; the test needs two versions")
			}
			for want, refs := range map[string][]string{
				first:  {"@1", "1", "serial:1", "@-1", "first"},
				latest: {"@2", "2", "latest", "@latest", "serial:2"},
			} {
				for _, ref := range refs {
					if got := k("state", "pull", "prod", ref); got != want {
						t.Errorf("kl state pull prod %s: another version", ref)
					}
					if got := k("state", "pull", "prod", "--version", ref); got != want {
						t.Errorf("kl state pull prod --version %s: another version", ref)
					}
					for _, args := range [][]string{
						{"show", "prod", ref}, {"show", "prod", "--version", ref},
						{"export", "prod", ref}, {"export", "prod", "--version", ref},
						{"graph", "prod", ref, "--address", "aws_instance.web"},
						{"graph", "prod", "--version", ref, "--address", "aws_instance.web"},
						{"diff", "prod", ref}, {"diff", "prod", "@1", ref},
						{"rollback", "prod", "--to", ref},
						{"rollback", "resource", "--state", "prod", "--address", "aws_instance.web", "--to", ref},
					} {
						k(args...)
					}
				}
			}
			if _, errOut, code := kl(t, "--server", srv.URL, "show", "prod", "@1", "--version", "@2"); code != 2 || !strings.Contains(errOut, "two versions") {
				t.Errorf("show with two versions: exit %d, %s", code, errOut)
			}
			if _, errOut, code := kl(t, "--server", srv.URL, "state", "pull", "prod", "--version", "nope!"); code != 2 || !strings.Contains(errOut, "not a version reference") {
				t.Errorf("state pull --version nope!: exit %d, %s", code, errOut)
			}
		})
	}
}

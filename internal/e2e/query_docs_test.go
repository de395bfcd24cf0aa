package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestQueryLibraryForms runs every query of docs/queries, each starting
// with a -- comment, through the real kl in the three forms the docs give:
// the README's `kl query "$(cat FILE)"`, `kl query --file FILE` and
// `kl query -` with the SQL on stdin. All three answer alike, and a flag
// after the SQL still counts (--json). Both stores.
func TestQueryLibraryForms(t *testing.T) {
	root := tofu.ModuleRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "queries", "*.sql"))
	if err != nil || len(files) < 8 {
		t.Fatalf("docs/queries: %d files, %v", len(files), err)
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := tofu.StartKLD(t, s.url(t))
			mustKL(t, "--server", srv.URL, "import", "prod", filepath.Join(root, "docs", "queries", "testdata", "prod-1.tfstate"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				sql := string(b)
				if !strings.HasPrefix(sql, "--") {
					t.Fatalf("%s does not start with a -- comment; the test no longer covers it", f)
				}
				t.Run(filepath.Base(f), func(t *testing.T) {
					asArg := mustKL(t, "--server", srv.URL, "query", sql)
					if !strings.Contains(asArg, " row") {
						t.Fatalf("kl query: %q", asArg)
					}
					if got := mustKL(t, "--server", srv.URL, "query", "--file", f); got != asArg {
						t.Errorf("--file answers\n%s\nthe argument answers\n%s", got, asArg)
					}
					if got := klStdin(t, sql, "--server", srv.URL, "query", "-"); got != asArg {
						t.Errorf("stdin answers\n%s\nthe argument answers\n%s", got, asArg)
					}
					var res struct {
						Columns []string `json:"columns"`
					}
					if out := mustKL(t, "--server", srv.URL, "query", sql, "--json"); json.Unmarshal([]byte(out), &res) != nil || len(res.Columns) == 0 {
						t.Errorf("kl query SQL --json: %q", out)
					}
				})
			}
			if _, errOut, code := kl(t, "--server", srv.URL, "query", "SELECT 1", "--file", files[0]); code != 2 || !strings.Contains(errOut, "not both") {
				t.Errorf("SQL and --file: exit %d, %s", code, errOut)
			}
		})
	}
}

// klStdin runs kl with stdin and fails t unless it exits 0.
func klStdin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), tofu.BuildKL(t), args...)
	cmd.Env = append(tofu.CleanEnv("KL_"), "NO_COLOR=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

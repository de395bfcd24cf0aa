package klcli_test

import (
	"context"
	"io"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/internal/klcli"
)

// dryRunEnd is how every dry run ends (docs/cli.md, "Dry runs").
var dryRunEnd = regexp.MustCompile(`(?m)^Dry run: nothing was changed\. To do it: .+\.\n\z`)

// TestDryRunConvention: on both lanes (--database and --server), every
// command that writes takes --dry-run, says what it would do, ends with the
// same line and changes nothing; without it the command writes and says
// what it did; and a dry run that would be refused exits as the real run
// does.
func TestDryRunConvention(t *testing.T) {
	ctx := context.Background()
	for _, lane := range []string{"database", "server"} {
		t.Run(lane, func(t *testing.T) {
			path := sqliteURL(t)
			e := seededEngine(t, path)
			for _, name := range []string{"app", "keep"} {
				for _, doc := range []string{"prod-1", "prod-2", "prod-3"} {
					if _, err := e.Write(ctx, name, seedDoc(t, doc), kilolock.WriteOptions{Actor: "test"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			global := []string{"--database", path}
			if lane == "server" {
				srv := httptest.NewServer(httpbackend.New(e, httpbackend.Options{Logger: log.New(io.Discard)}))
				t.Cleanup(srv.Close)
				global = []string{"--server", srv.URL}
			}
			kl := func(args ...string) (string, error) {
				t.Helper()
				return runKL(t, append(append([]string{}, global...), args...)...)
			}
			current := func(name string) int64 {
				t.Helper()
				st, err := e.State(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				return st.Current
			}
			if _, err := kl("retention", "set", "--state", "keep", "--keep-last", "1"); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name      string
				dry, real []string
				state     string // whose current version the real run moves ("" for none)
				did       string // what the real run says it did
			}{
				{"state rm", []string{"state", "rm", "app", "terraform_data.c", "--dry-run"}, []string{"state", "rm", "app", "terraform_data.c"}, "app", "Written as version"},
				{"state mv", []string{"state", "mv", "app", "terraform_data.b", "terraform_data.bb", "--dry-run"}, []string{"state", "mv", "app", "terraform_data.b", "terraform_data.bb"}, "app", "Written as version"},
				{"move between states", []string{"state", "split", "app", "--to-state", "net", "--address", "terraform_data.a", "--dry-run"}, []string{"state", "split", "app", "--to-state", "net", "--address", "terraform_data.a"}, "app", "Split 1 instance"},
				{"rollback", []string{"rollback", "app", "--to", "@1", "--dry-run"}, []string{"rollback", "app", "--to", "@1", "--apply", "--yes"}, "app", "Rolled back as new version"},
				{"retention apply", []string{"retention", "apply", "--state", "keep", "--dry-run"}, []string{"retention", "apply", "--state", "keep"}, "", "Pruned 2 versions"},
			} {
				before := current("app")
				out, err := kl(tc.dry...)
				if err != nil || !strings.Contains(strings.ToLower(out), "would") || !dryRunEnd.MatchString(out) {
					t.Errorf("%s --dry-run: %v\n%s", tc.name, err, out)
				}
				if current("app") != before {
					t.Errorf("%s --dry-run wrote a version", tc.name)
				}
				out, err = kl(tc.real...)
				if err != nil || strings.Contains(out, "Dry run") || !strings.Contains(out, tc.did) {
					t.Errorf("%s: %v\n%s", tc.name, err, out)
				}
				if tc.state != "" && current(tc.state) == before {
					t.Errorf("%s wrote no version", tc.name)
				}
			}
			// Refused: the dry run exits as the real run would.
			for _, tc := range []struct {
				name      string
				dry, real []string
			}{
				{"state rm of nothing", []string{"state", "rm", "app", "terraform_data.nope", "--dry-run"}, []string{"state", "rm", "app", "terraform_data.nope"}},
				{"state mv of nothing", []string{"state", "mv", "app", "terraform_data.nope", "terraform_data.x", "--dry-run"}, []string{"state", "mv", "app", "terraform_data.nope", "terraform_data.x"}},
				{"rollback to nothing", []string{"rollback", "app", "--to", "@99", "--dry-run"}, []string{"rollback", "app", "--to", "@99", "--apply", "--yes"}},
				{"retention of nothing", []string{"retention", "apply", "--state", "nope", "--dry-run"}, []string{"retention", "apply", "--state", "nope"}},
			} {
				_, errDry := kl(tc.dry...)
				_, errReal := kl(tc.real...)
				if errDry == nil || errReal == nil || klcli.ExitCode(errDry) != klcli.ExitCode(errReal) {
					t.Errorf("%s: the dry run exits %d (%v), the real run %d (%v)", tc.name, klcli.ExitCode(errDry), errDry, klcli.ExitCode(errReal), errReal)
				}
			}
			if _, err := kl("rollback", "app", "--to", "@1", "--dry-run", "--apply", "--yes"); err == nil {
				t.Error("rollback --dry-run --apply was accepted")
			}
		})
	}
}

package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// tagDoc is a state of lineage lin-tags at serial with terraform_data.a's
// output set to value.
func tagDoc(serial int, value string) []byte {
	return fmt.Appendf(nil, `{"version":4,"terraform_version":"1.10.0","serial":%d,"lineage":"lin-tags","outputs":{},
"resources":[{"mode":"managed","type":"terraform_data","name":"a","provider":"provider[\"terraform.io/builtin/terraform\"]",
"instances":[{"schema_version":0,"attributes":{"id":"fixed","input":null,"output":%q,"triggers_replace":null}}]}]}`, serial, value)
}

// TestTagsAsVersionReferences: through a real kld and on the database
// alike, a tag names its version in kl show, diff, export and rollback
// --to; it stays on that version after later writes; names that look like
// a version are refused before anything changes; each change is audited.
func TestTagsAsVersionReferences(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		for i, v := range []string{"before", "after"} {
			if code, b := request(t, http.MethodPost, srv.URL+"/v1/states/app", tagDoc(i+1, v)); code != http.StatusOK {
				t.Fatalf("POST serial %d: %d %s", i+1, code, b)
			}
		}
		server, database := []string{"--server", srv.URL}, []string{"--database", databaseURL}
		mustKL(t, append(server, "tag", "set", "app", "pre-migration", "@1", "--description", "before the move")...)
		for _, target := range [][]string{server, database} {
			with := func(args ...string) string { return mustKL(t, append(append([]string{}, target...), args...)...) }
			if out := with("show", "app", "pre-migration", "--address", "terraform_data.a"); !strings.Contains(out, "@1") || !strings.Contains(out, "before") {
				t.Errorf("kl %s show app pre-migration:\n%s", target[0], out)
			}
			if out := with("diff", "app", "pre-migration"); !strings.Contains(out, "terraform_data.a") || !strings.Contains(out, "after") {
				t.Errorf("kl %s diff app pre-migration:\n%s", target[0], out)
			}
			if out := with("export", "app", "pre-migration"); !strings.Contains(out, `"serial":1`) || !strings.Contains(out, `"before"`) || strings.Contains(out, `"after"`) {
				t.Errorf("kl %s export app pre-migration:\n%s", target[0], out)
			}
			for _, bad := range []string{"latest", "@2", "serial:1", "12"} {
				_, errOut, code := kl(t, append(append([]string{}, target...), "tag", "set", "app", bad, "@1")...)
				if code == 0 || !strings.Contains(errOut, "is not a tag name") {
					t.Errorf("kl %s tag set app %s: exit %d\n%s", target[0], bad, code, errOut)
				}
			}
		}
		// A rollback to the tag writes @3 with @1's content; the tag still
		// names @1.
		if out := mustKL(t, append(database, "rollback", "app", "--to", "pre-migration", "--apply", "--yes")...); !strings.Contains(out, "new version @3") {
			t.Fatalf("kl rollback --to pre-migration:\n%s", out)
		}
		if out := mustKL(t, append(server, "show", "app", "--address", "terraform_data.a")...); !strings.Contains(out, "@3") || !strings.Contains(out, "before") {
			t.Errorf("the current version after the rollback:\n%s", out)
		}
		if out := mustKL(t, append(server, "tag", "list", "app")...); !strings.Contains(out, "pre-migration  @1") || !strings.Contains(out, "before the move") {
			t.Errorf("kl tag list after the rollback:\n%s", out)
		}
		if out := mustKL(t, append(server, "tag", "list", "app")...); strings.Contains(out, "latest") || strings.Contains(out, "serial:1") {
			t.Errorf("a refused name was kept:\n%s", out)
		}
		mustKL(t, append(database, "tag", "unset", "app", "pre-migration")...)
		if _, errOut, code := kl(t, append(server, "show", "app", "pre-migration")...); code == 0 || !strings.Contains(errOut, "kl tag list app") {
			t.Errorf("kl show of an unset tag: exit %d\n%s", code, errOut)
		}
		out := mustKL(t, append(database, "audit")...)
		if !strings.Contains(out, "tag.set") || !strings.Contains(out, "tag.unset") || !strings.Contains(out, "app@pre-migration") || !strings.Contains(out, "db:") {
			t.Errorf("kl audit lacks the tag changes:\n%s", out)
		}
	})
}

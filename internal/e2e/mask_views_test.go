package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/keyring"
)

// maskConfig holds a password twice where nothing marks it: terraform_data
// "db" takes it as a sensitive input and repeats it in its unmarked output,
// and terraform_data "conn" builds a connection string from a plain copy
// that only a sensitive output marks.
func maskConfig(backend string) string {
	return backend + `
variable "pw" {
  type      = string
  sensitive = true
}

variable "pw_plain" {
  type = string
}

resource "terraform_data" "db" {
  input = var.pw
}

resource "terraform_data" "conn" {
  input = "pg://admin:${var.pw_plain}@db-1.internal"
}

output "pw" {
  value     = var.pw_plain
  sensitive = true
}
`
}

// TestViewsMaskRepeatedSecrets: after two real applies that change a
// password, kl diff, kl show --address, kl history --address and the web
// view's diff show what changed, masked, and the password nowhere — not in
// terraform_data's output, which repeats its sensitive input unmarked, nor
// in a connection string that holds a sensitive output's value.
func TestViewsMaskRepeatedSecrets(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := tofu.StartKLD(t, databaseURL)
		wd := tofu.NewWorkdir(t, maskConfig(srv.Backend("masked")))
		wd.Must("init", "-no-color")
		var passwords []string
		for range 2 {
			pw := "pw-" + keyring.Generate()[:20]
			passwords = append(passwords, pw)
			wd.Setenv("TF_VAR_pw", pw)
			wd.Setenv("TF_VAR_pw_plain", pw)
			wd.Must("apply", "-auto-approve", "-no-color")
		}
		if doc := string(getState(t, srv, "masked")); !strings.Contains(doc, `"output":{"value":"`+passwords[1]) || !strings.Contains(doc, "pg://admin:"+passwords[1]) {
			t.Fatalf("the state lacks the unmarked copies of the password: the test checks nothing\n%s", doc)
		}
		code, page := request(t, http.MethodGet, srv.URL+"/ui/states/masked/diff?from=@-1&to=@latest", nil)
		if code != http.StatusOK {
			t.Fatalf("web diff: %d\n%s", code, page)
		}
		views := map[string]string{
			"kl diff":                  mustKL(t, "--server", srv.URL, "diff", "masked", "@-1", "@latest"),
			"kl diff --json":           mustKL(t, "--server", srv.URL, "diff", "masked", "@-1", "@latest", "--json"),
			"kl show --address db":     mustKL(t, "--server", srv.URL, "show", "masked", "--address", "terraform_data.db"),
			"kl show --address conn":   mustKL(t, "--server", srv.URL, "show", "masked", "--address", "terraform_data.conn", "--json"),
			"kl history --address db":  mustKL(t, "--server", srv.URL, "history", "masked", "--address", "terraform_data.db"),
			"kl history --address con": mustKL(t, "--server", srv.URL, "history", "masked", "--address", "terraform_data.conn", "--json"),
			"the web view's diff":      string(page),
		}
		for what, got := range views {
			for _, pw := range passwords {
				if strings.Contains(got, pw) {
					t.Errorf("%s shows the password %s:\n%s", what, pw, got)
				}
			}
			if !strings.Contains(got, "(sensitive)") {
				t.Errorf("%s shows nothing masked:\n%s", what, got)
			}
		}
		for _, what := range []string{"kl diff", "the web view's diff", "kl history --address db"} {
			if !strings.Contains(views[what], "output") {
				t.Errorf("%s does not show that terraform_data.db's output changed:\n%s", what, views[what])
			}
		}
	})
}

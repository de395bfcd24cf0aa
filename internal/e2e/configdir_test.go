package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// dirConfig needs no provider: terraform_data's input follows var.v.
const dirConfig = `
variable "v" {
  default = "v1"
}
resource "terraform_data" "d" {
  input = var.v
}
`

// TestCommandsInConfigDir runs every kl command that takes a configuration
// directory with none, from inside one, as a user who cd'd there would:
// drift check, plan, quota check and apply (plain and orchestrated) find
// the server and the state in the initialized backend and the CLI in
// KL_TF_BIN alone (no tofu in PATH). Each prints kl's own summary on
// stdout; the CLI's output shows on stderr only with --verbose, and its
// JSON never. The old names of drift check's CLI flag still work, with a
// warning.
func TestCommandsInConfigDir(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("here")+dirConfig)
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		noTofu := []string{"PATH=" + t.TempDir()} // KL_TF_BIN names the CLI; nothing else could
		run := func(env []string, args ...string) *klRun {
			t.Helper()
			r := startKLEnv(t, wd, append(noTofu, env...), args...)
			r.mustSucceed()
			if all := r.output(); strings.Contains(all, `"format_version"`) {
				t.Errorf("kl %s printed the CLI's JSON:\n%s", strings.Join(args, " "), all)
			}
			return r
		}

		const summary = "checked @1 of here, the whole state: 0 instances drifted\n"
		r := run(nil, "drift", "check")
		if got := r.out.String(); got != summary {
			t.Errorf("kl drift check: stdout %q, want kl's summary alone, %q", got, summary)
		}
		if strings.Contains(r.err.String(), "Refreshing state") {
			t.Errorf("kl drift check showed the CLI's plan without --verbose:\n%s", r.err.String())
		}
		r = run(nil, "--verbose", "drift", "check")
		if got := r.out.String(); got != summary {
			t.Errorf("kl --verbose drift check: stdout %q, want kl's summary alone, %q", got, summary)
		}
		if !strings.Contains(r.err.String(), "terraform_data.d: Refreshing state...") {
			t.Errorf("kl --verbose drift check does not show the CLI's plan on stderr:\n%s", r.err.String())
		}

		r = run(nil, "plan", "--var", "v=v2")
		for _, want := range []string{"0 to add, 1 to change, 0 to destroy, 0 to replace", "plan spec: kl-plan.json"} {
			if !strings.Contains(r.out.String(), want) {
				t.Errorf("kl plan does not print %q:\n%s", want, r.output())
			}
		}
		if strings.Contains(r.output(), "Plan: 0 to add") {
			t.Errorf("kl plan showed the CLI's plan without --verbose:\n%s", r.output())
		}
		if spec := wd.ReadFile("kl-plan.json"); !strings.Contains(spec, `"state": "here"`) {
			t.Errorf("the plan spec in the directory does not name the state:\n%s", spec)
		}
		r = run(nil, "quota", "check", "--tf-plan", "kl-plan.tfplan")
		if !strings.Contains(r.out.String(), "OK   state here: 1 managed instance(s)") {
			t.Errorf("kl quota check in the directory:\n%s", r.output())
		}

		r = run(nil, "apply", "--var", "v=v2")
		if got, want := r.out.String(), "applied in state \"here\": 0 added, 1 changed, 0 destroyed, 0 replaced\n"; got != want {
			t.Errorf("kl apply: stdout %q, want kl's summary %q\n%s", got, want, r.output())
		}
		if strings.Contains(r.output(), "Apply complete!") {
			t.Errorf("kl apply showed the CLI's output without --verbose:\n%s", r.output())
		}
		if got := dataInput(t, srv, "here", "d"); got != "v2" {
			t.Errorf("after kl apply --var v=v2 the input is %q", got)
		}
		r = run(nil, "apply", "--orchestrated", "--var", "v=v3")
		if got := r.out.String(); !strings.HasPrefix(got, "applied in state \"here\" (apply run run_") || !strings.HasSuffix(got, "): 0 added, 1 changed, 0 destroyed, 0 replaced\n") {
			t.Errorf("kl apply --orchestrated: stdout %q, want kl's summary naming the run\n%s", got, r.output())
		}
		if got := dataInput(t, srv, "here", "d"); got != "v3" {
			t.Errorf("after kl apply --orchestrated --var v=v3 the input is %q", got)
		}

		// --tf-bin is the one name; the old ones of drift check work, and
		// say they are deprecated.
		bin := tofu.Binary(t)
		r = run([]string{"KL_TF_BIN=", "KL_TOFU=" + bin}, "drift", "check")
		if !strings.Contains(r.err.String(), "KL_TOFU is deprecated: use --tf-bin (KL_TF_BIN)") || r.out.String() != strings.Replace(summary, "@1", "@3", 1) {
			t.Errorf("kl drift check with KL_TOFU:\n%s", r.output())
		}
		r = run([]string{"KL_TF_BIN="}, "drift", "check", "--tofu", bin)
		if !strings.Contains(r.err.String(), "--tofu is deprecated: use --tf-bin (KL_TF_BIN)") {
			t.Errorf("kl drift check --tofu:\n%s", r.output())
		}
		r = run([]string{"KL_TF_BIN="}, "drift", "check", "--tf-bin", bin)
		if strings.Contains(r.err.String(), "deprecated") {
			t.Errorf("kl drift check --tf-bin warns:\n%s", r.output())
		}
		missing := startKLEnv(t, wd, append(noTofu, "KL_TF_BIN="), "drift", "check")
		if code := missing.wait(); code != 2 || !strings.Contains(missing.err.String(), "neither tofu nor terraform is in PATH") || !strings.Contains(missing.err.String(), "--tf-bin") {
			t.Errorf("kl drift check with no CLI anywhere: exit %d, want 2 naming --tf-bin\n%s", code, missing.output())
		}
	})
}

// dataInput is the input of terraform_data.NAME in state.
func dataInput(t *testing.T, srv *tofu.Server, state, name string) string {
	t.Helper()
	var st struct {
		Resources []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Instances []struct {
				Attributes struct {
					Input struct {
						Value string `json:"value"`
					} `json:"input"`
				} `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(getState(t, srv, state), &st); err != nil {
		t.Fatalf("state %s: %v", state, err)
	}
	for _, r := range st.Resources {
		if r.Type == "terraform_data" && r.Name == name && len(r.Instances) == 1 {
			return r.Instances[0].Attributes.Input.Value
		}
	}
	t.Fatalf("state %s has no terraform_data.%s", state, name)
	return ""
}

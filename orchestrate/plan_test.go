package orchestrate

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// TestScopeResolve: a scope's files and targets become the CLI's -target
// arguments; a file outside the configuration, one that declares nothing,
// and a target that is no resource, instance or module are refused as
// invalid input.
func TestScopeResolve(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.tf":   `resource "terraform_data" "base" {}` + "\n" + `module "net" { source = "./net" }`,
		"slow_a.tf": `resource "time_sleep" "slow_a" {}` + "\n" + `data "terraform_remote_state" "x" {}`,
		"empty.tf":  `variable "v" {}`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		scope   Scope
		targets []string
		bad     string
	}{
		{name: "files", scope: Scope{Files: []string{"slow_a.tf", "main.tf"}}, targets: []string{"data.terraform_remote_state.x", "module.net", "terraform_data.base", "time_sleep.slow_a"}},
		{name: "targets", scope: Scope{Targets: []string{`terraform_data.named["a"]`, "module.net"}}, targets: []string{"module.net", `terraform_data.named["a"]`}},
		{name: "missing file", scope: Scope{Files: []string{"nope.tf"}}, bad: "no such configuration file"},
		{name: "declares nothing", scope: Scope{Files: []string{"empty.tf"}}, bad: "declare(s) no resource"},
		{name: "output target", scope: Scope{Targets: []string{"output.x"}}, bad: "not a resource, instance or module address"},
		{name: "everything", scope: Scope{Targets: []string{"*"}}, bad: "not a resource, instance or module address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := tc.scope.resolve(dir)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("resolve = %v; want an error saying %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rs.targets, tc.targets) {
				t.Fatalf("targets = %q, want %q", rs.targets, tc.targets)
			}
		})
	}
}

// plansDir holds plans the real OpenTofu CLI made of the configuration in
// its config folder (reserve/testdata/plans, generate.sh).
var plansDir = filepath.Join("..", "reserve", "testdata", "plans")

// readPlan reads the show -json plan fixture name.
func readPlan(t *testing.T, name string) *tfjson.Plan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(plansDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// savedPlan writes a plan file (a zip archive) holding tfstate as its
// state entry, none when tfstate is "".
func savedPlan(t *testing.T, tfstate string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.tfplan")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	entries := map[string]string{"tfplan": "opaque"}
	if tfstate != "" {
		entries["tfstate"] = tfstate
	}
	for name, body := range entries {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// TestSpecOf: a plan's spec holds its writes, reads, reservations and
// actions, the serial and lineage of the state its plan file holds, and
// its variables; a plan against no state has the zero source.
func TestSpecOf(t *testing.T) {
	dir := filepath.Join(plansDir, "config")
	whole, err := Scope{}.resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	req := PlanRequest{State: "big-state", Vars: []string{"slow_a_version=v2"}, Actor: "alice@ci"}
	spec, err := specOf(readPlan(t, "replace_a"), savedPlan(t, `{"serial":7,"lineage":"l-1"}`), dir, whole, req)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Source != (reserve.Source{Serial: 7, Lineage: "l-1"}) {
		t.Errorf("source %+v, want serial 7 of lineage l-1", spec.Source)
	}
	if spec.Actions.Replace != 1 || spec.Actions.Update != 2 || spec.Actions.Create != 0 {
		t.Errorf("actions %+v, want 1 replaced and 2 updated", spec.Actions)
	}
	if got := applyTargets(spec); !slices.Equal(got, []string{`module.net["eu"].terraform_data.vpc`, `module.net["us"].terraform_data.vpc`, "time_sleep.slow_a"}) {
		t.Errorf("apply targets %q", got)
	}
	if len(spec.Variables) != 1 || spec.Variables[0] != (reserve.Variable{Name: "slow_a_version", Value: "v2"}) {
		t.Errorf("variables %+v", spec.Variables)
	}
	if spec.State != "big-state" || spec.CreatedBy != "alice@ci" || len(spec.Reservations) == 0 {
		t.Errorf("spec %+v", spec)
	}

	spec, err = specOf(readPlan(t, "create"), savedPlan(t, ""), dir, whole, req)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Source != (reserve.Source{}) || spec.Actions.Create != 5 {
		t.Errorf("a first plan: source %+v, actions %+v; want the zero source and 5 creates", spec.Source, spec.Actions)
	}

	if _, err := specOf(readPlan(t, "create"), filepath.Join(t.TempDir(), "missing.tfplan"), dir, whole, req); err == nil {
		t.Error("specOf of a missing plan file: no error")
	}
}

// TestScopeErrorNamesTheFile: a plan that writes outside its scope is a
// *ScopeError (a conflict) naming each write and the root module file
// that declares it, with a hint to widen the scope by that file.
func TestScopeErrorNamesTheFile(t *testing.T) {
	dir := filepath.Join(plansDir, "config")
	scope, err := Scope{Targets: []string{"module.net"}}.resolve(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = specOf(readPlan(t, "replace_a"), savedPlan(t, ""), dir, scope, PlanRequest{})
	var se *ScopeError
	if !errors.As(err, &se) || !errors.Is(err, kilolock.ErrConflict) {
		t.Fatalf("specOf outside the scope = %v, want a *ScopeError", err)
	}
	if len(se.Outside) != 1 || se.Outside[0].Change.Address != "time_sleep.slow_a" || se.Outside[0].File != "main.tf" || se.Outside[0].Line == 0 {
		t.Fatalf("outside %+v, want time_sleep.slow_a of main.tf", se.Outside)
	}
	if !strings.Contains(se.Error(), "--target module.net") || !strings.Contains(se.Hint(), "add -f main.tf") {
		t.Errorf("message %q, hint %q", se.Error(), se.Hint())
	}
}

// TestReadSpecInvalid: a plan spec that cannot be read is invalid input
// saying how to make one.
func TestReadSpecInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spec.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	_, err := ReadSpec(path)
	var ie *kilolock.InvalidError
	if !errors.As(err, &ie) || !strings.Contains(ie.Hint, "kl plan -o FILE") {
		t.Fatalf("ReadSpec of garbage = %v, want an invalid-input error hinting kl plan -o", err)
	}
}

// TestApplyArgs: the CLI's apply runs without prompts or colour, with the
// variable files, targets and variables given, of a saved plan when one is
// given.
func TestApplyArgs(t *testing.T) {
	got := applyArgs([]string{"time_sleep.slow_a"}, []string{"v=1"}, []string{"prod.tfvars"}, "")
	want := []string{"apply", "-no-color", "-auto-approve", "-input=false", "-var-file=prod.tfvars", "-target=time_sleep.slow_a", "-var", "v=1"}
	if !slices.Equal(got, want) {
		t.Errorf("applyArgs = %q, want %q", got, want)
	}
	if got := applyArgs(nil, nil, nil, "/tmp/p.tfplan"); !slices.Equal(got, []string{"apply", "-no-color", "-auto-approve", "-input=false", "/tmp/p.tfplan"}) {
		t.Errorf("applyArgs of a saved plan = %q", got)
	}
}

// TestRunInfo: the run tells others what runs it: the command and its
// scope, file names without their directories, bounded in length.
func TestRunInfo(t *testing.T) {
	o := &orchestration{req: ApplyRequest{SpecPath: "/ci/out/kl-plan.json", Scope: Scope{Files: []string{"/ci/cfg/net.tf"}, Targets: []string{"module.db"}}}}
	if got, want := o.info(), "kl apply --orchestrated --plan-spec kl-plan.json -f net.tf --target module.db"; got != want {
		t.Errorf("info = %q, want %q", got, want)
	}
	o.req = ApplyRequest{Scope: Scope{Targets: slices.Repeat([]string{strings.Repeat("x", 100)}, 20)}}
	if got := o.info(); len(got) > 1000+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("a long scope's info is %d bytes, unbounded", len(got))
	}
}

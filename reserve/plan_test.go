package reserve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

// loadPlan reads a fixture made by testdata/plans/generate.sh with the
// real OpenTofu CLI.
func loadPlan(t testing.TB, name string) *tfjson.Plan {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plans", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var p tfjson.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		plan         string
		reservations []string // "PATTERN (MODE)", canonical order
		actions      Actions
		delta        int
	}{
		{
			plan: "create",
			reservations: []string{
				`module.net["eu"].terraform_data.vpc (write)`, `module.net["us"].terraform_data.vpc (write)`,
				"output.a_id (write)", "terraform_data.reader (write)", "time_sleep.slow_a (write)", "time_sleep.slow_b (write)",
			},
			actions: Actions{Create: 5, Outputs: 1}, delta: 5,
		},
		{
			// The module reads slow_a through its input variable; slow_a
			// is written, so it is not reserved for reading as well.
			plan: "replace_a",
			reservations: []string{
				`module.net["eu"].terraform_data.vpc (write)`, `module.net["us"].terraform_data.vpc (write)`,
				"output.a_id (write)", "time_sleep.slow_a (write)",
			},
			actions: Actions{Replace: 1, Update: 2, Outputs: 1},
		},
		{
			plan:         "reader_only",
			reservations: []string{"terraform_data.reader (write)", "time_sleep.slow_b (read)"},
			actions:      Actions{Replace: 1},
		},
		{
			plan:         "add_region",
			reservations: []string{`module.net["ap"].terraform_data.vpc (write)`, "time_sleep.slow_a (read)"},
			actions:      Actions{Create: 1}, delta: 1,
		},
		{
			plan:         "drop_region",
			reservations: []string{`module.net["us"].terraform_data.vpc (write)`, "time_sleep.slow_a (read)"},
			actions:      Actions{Delete: 1}, delta: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.plan, func(t *testing.T) {
			a, err := Analyze(loadPlan(t, tt.plan))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range a.Reservations {
				got = append(got, r.String())
			}
			if !slices.Equal(got, tt.reservations) {
				t.Errorf("reservations:\n got %q\nwant %q", got, tt.reservations)
			}
			if a.Actions != tt.actions || a.Quota.Delta() != int64(tt.delta) {
				t.Errorf("actions = %+v (quota delta %d), want %+v (delta %d)", a.Actions, a.Quota.Delta(), tt.actions, tt.delta)
			}
			for _, w := range a.Writes {
				if len(w.Actions) == 0 || w.Actions[0] == "no-op" {
					t.Errorf("write %+v has no action", w)
				}
			}
		})
	}
}

func TestOutOfScope(t *testing.T) {
	a, err := Analyze(loadPlan(t, "replace_a"))
	if err != nil {
		t.Fatal(err)
	}
	out := a.OutOfScope([]Pattern{MustParse("time_sleep.slow_a")})
	var got []string
	for _, w := range out {
		got = append(got, w.Address)
	}
	want := []string{`module.net["eu"].terraform_data.vpc`, `module.net["us"].terraform_data.vpc`}
	if !slices.Equal(got, want) {
		t.Errorf("out of scope = %q, want %q (outputs never are)", got, want)
	}
	if out := a.OutOfScope([]Pattern{MustParse("time_sleep.slow_a"), MustParse("module.net.*")}); len(out) != 0 {
		t.Errorf("out of scope with the module too: %+v", out)
	}
}

func TestSpecFile(t *testing.T) {
	a, err := Analyze(loadPlan(t, "reader_only"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Spec{Format: SpecFormat, FormatVersion: SpecVersion, State: "big-state", Source: Source{Serial: 7, Lineage: "l"},
		Writes: a.Writes, Reads: a.Reads, Reservations: a.Reservations, Actions: a.Actions}
	path := filepath.Join(t.TempDir(), "kl-plan.json")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "big-state" || got.Source.Serial != 7 || len(got.Reservations) != 2 || got.Reservations[1].Pattern.String() != "time_sleep.slow_b" {
		t.Errorf("read back %+v", got)
	}
	if got.Summary() != "0 to add, 0 to change, 0 to destroy, 1 to replace; reservations: 1 write, 1 read" {
		t.Errorf("summary = %q", got.Summary())
	}
	os.WriteFile(path, []byte(`{"format":"kilolock-plan-spec","format_version":2}`), 0o644)
	if _, err := ReadSpec(path); err == nil {
		t.Error("a newer format version was read")
	}
	os.WriteFile(path, []byte(`{"format_version":1}`), 0o644)
	if _, err := ReadSpec(path); err == nil {
		t.Error("a file without the format was read")
	}
}

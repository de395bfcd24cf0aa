package quota

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

// TestCheckBoundaries is the table of the boundary rules: exactly the
// hard limit is allowed, one more is refused; above soft warns; a scope
// above its hard limit may change and shrink, never grow.
func TestCheckBoundaries(t *testing.T) {
	l := Limit{Soft: 80, Hard: 100}
	tests := []struct {
		name           string
		current, delta int64
		limit          Limit
		level          Level
		remaining      int64
	}{
		{"empty", 0, 0, l, Within, 100},
		{"exactly soft: no warning", 79, 1, l, Within, 20},
		{"one above soft", 80, 1, l, Warn, 19},
		{"exactly hard is allowed", 99, 1, l, Warn, 0},
		{"a jump to exactly hard", 0, 100, l, Warn, 0},
		{"one above hard", 100, 1, l, Exceed, -1},
		{"a jump past hard", 10, 91, l, Exceed, -1},
		{"at hard, unchanged", 100, 0, l, Warn, 0},
		{"shrinking back within", 120, -50, l, Within, 30},
		{"never below zero", 5, -10, l, Within, 100},
		{"shrinking into the limit", 101, -1, l, Warn, 0},
		{"above hard, shrinking", 105, -1, l, Warn, -4},
		{"above hard, unchanged", 105, 0, l, Warn, -5},
		{"above hard, growing", 105, 1, l, Exceed, -6},
		{"no soft limit: exactly hard", 5, 5, Limit{Hard: 10}, Within, 0},
		{"no soft limit: above hard", 5, 10, Limit{Hard: 10}, Exceed, -5},
		{"hard 1: the first instance", 0, 1, Limit{Hard: 1}, Within, 0},
		{"hard 1: a second", 1, 1, Limit{Hard: 1}, Exceed, -1},
		{"unlimited", 1e9, 1, Limit{Unlimited: true}, Within, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(ScopeState, "s", tt.current, tt.delta, tt.limit)
			if v.Level != tt.level || v.Remaining != tt.remaining || v.Refused() != (tt.level == Exceed) {
				t.Errorf("Check(%d%+d, %s) = %s, %d left; want %s, %d left", tt.current, tt.delta, tt.limit, v.Level, v.Remaining, tt.level, tt.remaining)
			}
			if v.Current != tt.current || v.Result != max(0, tt.current+tt.delta) {
				t.Errorf("Check(%d%+d) counts %d -> %d", tt.current, tt.delta, v.Current, v.Result)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	v := Check(ScopeState, "prod.network", 100, 1, Limit{Soft: 80, Hard: 100})
	if got := v.Message(); got != "state prod.network: 101 managed instance(s) would exceed the hard limit of 100 (soft 80)" {
		t.Errorf("exceed: %q", got)
	}
	v = Check(ScopeEnvironment, "prod", 85, 0, Limit{Soft: 80, Hard: 100})
	if got := v.Message(); got != "environment prod: 85 managed instance(s) is above the soft limit of 80 (hard 100, 15 left)" {
		t.Errorf("warn: %q", got)
	}
	v = Check(ScopeState, "big", 105, -1, Limit{Hard: 100})
	if got := v.Message(); got != "state big: 104 managed instance(s) is above the hard limit of 100; allowed because it does not grow (4 to remove to get back within it)" {
		t.Errorf("above hard, shrinking: %q", got)
	}
}

func TestLimitValidateAndParse(t *testing.T) {
	good := map[string]Limit{"80,100": {Soft: 80, Hard: 100}, "100": {Hard: 100}, " 0 , 5 ": {Hard: 5}, "unlimited": {Unlimited: true}, "UNLIMITED": {Unlimited: true}}
	for s, want := range good {
		got, err := ParseLimit(s)
		if err != nil || got != want {
			t.Errorf("ParseLimit(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "101,100", "-1,5", "a,b", "5,x", "1099511627777", "10,"} {
		if l, err := ParseLimit(s); err == nil {
			t.Errorf("ParseLimit(%q) = %+v, want an error", s, l)
		}
	}
	if err := (Limit{Unlimited: true, Hard: 5}).Validate(); err == nil {
		t.Error("unlimited with a hard limit validated")
	}
}

func TestResolve(t *testing.T) {
	state, env := &Limit{Hard: 10}, &Limit{Hard: 50}
	if l, ok := Resolve(nil, env, nil); !ok || l.Hard != 50 {
		t.Errorf("Resolve(nil, env) = %+v, %v", l, ok)
	}
	if l, _ := Resolve(state, env); l.Hard != 10 {
		t.Errorf("the nearest scope did not win: %+v", l)
	}
	if l, ok := Resolve(&Limit{Unlimited: true}, env); !ok || !l.Unlimited {
		t.Errorf("an explicit unlimited did not override: %+v", l)
	}
	if l, ok := Resolve(nil, nil); ok || !l.Unlimited {
		t.Errorf("nothing set = %+v, %v", l, ok)
	}
}

func TestWorst(t *testing.T) {
	a := Verdict{Scope: "state", Level: Warn}
	b := Verdict{Scope: "environment", Level: Exceed}
	c := Verdict{Scope: "state", Level: Within}
	if w := Worst(c, a, b); w.Scope != "environment" {
		t.Errorf("Worst = %+v", w)
	}
	if w := Worst(c, a); w.Level != Warn {
		t.Errorf("Worst = %+v", w)
	}
}

func TestCounts(t *testing.T) {
	if !Counts("managed", "") || Counts("data", "") || Counts("managed", "1a2b3c4d") {
		t.Error("only managed current objects count")
	}
}

// The plan fixtures were made by the real OpenTofu CLI (see
// reserve/testdata/plans/generate.sh).
func TestPlanDelta(t *testing.T) {
	for name, want := range map[string]int64{"create": 5, "replace_a": 0, "reader_only": 0, "add_region": 1, "drop_region": -1} {
		b, err := os.ReadFile(filepath.Join("..", "reserve", "testdata", "plans", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var p tfjson.Plan
		if err := json.NewDecoder(strings.NewReader(string(b))).Decode(&p); err != nil {
			t.Fatal(err)
		}
		if got := PlanDelta(&p); got != want {
			t.Errorf("PlanDelta(%s) = %d, want %d", name, got, want)
		}
	}
}

// TestPlanDeltaRules is the table of what a plan's changes count: only
// managed resources' current objects, so a create_before_destroy
// replacement (whose old object is deposed while it runs) counts 0.
func TestPlanDeltaRules(t *testing.T) {
	change := func(mode tfjson.ResourceMode, deposed string, actions ...tfjson.Action) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{Address: "x", Mode: mode, DeposedKey: deposed, Change: &tfjson.Change{Actions: actions}}
	}
	managed, data := tfjson.ManagedResourceMode, tfjson.DataResourceMode
	tests := []struct {
		name   string
		change *tfjson.ResourceChange
		want   int64
	}{
		{"create", change(managed, "", tfjson.ActionCreate), 1},
		{"delete", change(managed, "", tfjson.ActionDelete), -1},
		{"forget", change(managed, "", tfjson.ActionForget), -1},
		{"update", change(managed, "", tfjson.ActionUpdate), 0},
		{"no-op", change(managed, "", tfjson.ActionNoop), 0},
		{"replace, destroy first", change(managed, "", tfjson.ActionDelete, tfjson.ActionCreate), 0},
		{"replace, create first", change(managed, "", tfjson.ActionCreate, tfjson.ActionDelete), 0},
		{"a data source read", change(data, "", tfjson.ActionRead), 0},
		{"a data source created", change(data, "", tfjson.ActionCreate), 0},
		{"a deposed object deleted", change(managed, "00000001", tfjson.ActionDelete), 0},
		{"no change recorded", &tfjson.ResourceChange{Address: "x", Mode: managed}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{tt.change, nil}}
			if got := PlanDelta(p); got != tt.want {
				t.Errorf("PlanDelta = %d, want %d", got, tt.want)
			}
			if c := CountPlan(p); c.Create+c.Delete+c.Replace > 1 {
				t.Errorf("CountPlan = %+v: one change counted twice", c)
			}
		})
	}
}

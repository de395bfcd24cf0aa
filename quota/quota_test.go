package quota

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

func TestCheckBoundaries(t *testing.T) {
	l := Limit{Soft: 80, Hard: 100}
	tests := []struct {
		current, delta int64
		level          Level
		remaining      int64
	}{
		{0, 0, Within, 100},
		{79, 1, Within, 20},  // exactly soft: no warning
		{80, 1, Warn, 19},    // one above soft
		{99, 1, Warn, 0},     // exactly hard is allowed
		{100, 1, Exceed, -1}, // one above hard
		{100, 0, Warn, 0},
		{120, -50, Within, 30},
		{5, -10, Within, 100}, // never below zero
		{101, -1, Warn, 0},    // a state over its limit may shrink back into it
	}
	for _, tt := range tests {
		v := Check(ScopeState, "s", tt.current, tt.delta, l)
		if v.Level != tt.level || v.Remaining != tt.remaining {
			t.Errorf("Check(%d%+d) = %s, %d left; want %s, %d left", tt.current, tt.delta, v.Level, v.Remaining, tt.level, tt.remaining)
		}
	}
	if v := Check(ScopeState, "s", 5, 10, Limit{Hard: 10}); v.Level != Exceed {
		t.Errorf("without a soft limit, 15 of 10 = %s", v.Level)
	}
	if v := Check(ScopeState, "s", 5, 5, Limit{Hard: 10}); v.Level != Within {
		t.Errorf("without a soft limit, 10 of 10 = %s", v.Level)
	}
	if v := Check(ScopeEnvironment, "e", 1e9, 1, Limit{Unlimited: true}); v.Level != Within || v.Remaining != -1 {
		t.Errorf("unlimited = %+v", v)
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

package quota

import (
	"fmt"
	"strconv"
	"strings"
)

// Limit caps the managed resource instances of a scope (a state, or an
// environment: the sum of its active states). Exactly Hard is allowed;
// above it is refused. Above Soft (when Soft is set) is allowed with a
// warning. Unlimited says so explicitly, where a scope would otherwise
// inherit a limit.
type Limit struct {
	Soft      int64 `json:"soft,omitempty"`
	Hard      int64 `json:"hard,omitempty"`
	Unlimited bool  `json:"unlimited,omitempty"`
}

// MaxLimit bounds the numbers of a Limit: far above any real state, low
// enough that sums of many scopes never overflow.
const MaxLimit = 1 << 40

// Validate reports whether l is a limit a scope may have: unlimited, or
// 1 <= Hard <= MaxLimit with 0 <= Soft <= Hard (0: no soft limit).
func (l Limit) Validate() error {
	switch {
	case l.Unlimited && (l.Soft != 0 || l.Hard != 0):
		return fmt.Errorf("an unlimited quota takes no soft or hard limit")
	case l.Unlimited:
		return nil
	case l.Hard < 1 || l.Hard > MaxLimit:
		return fmt.Errorf("the hard limit must be between 1 and %d, got %d", int64(MaxLimit), l.Hard)
	case l.Soft < 0 || l.Soft > l.Hard:
		return fmt.Errorf("the soft limit must be between 0 (none) and the hard limit %d, got %d", l.Hard, l.Soft)
	}
	return nil
}

// String says "soft 80, hard 100", "hard 100" or "unlimited".
func (l Limit) String() string {
	switch {
	case l.Unlimited:
		return "unlimited"
	case l.Soft > 0:
		return fmt.Sprintf("soft %d, hard %d", l.Soft, l.Hard)
	}
	return fmt.Sprintf("hard %d", l.Hard)
}

// ParseLimit reads "SOFT,HARD", "HARD", or "unlimited" (the form of
// kld --default-state-quota).
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "unlimited") {
		return Limit{Unlimited: true}, nil
	}
	var l Limit
	soft, hard, two := strings.Cut(s, ",")
	if !two {
		hard, soft = soft, "0"
	}
	var err error
	if l.Soft, err = strconv.ParseInt(strings.TrimSpace(soft), 10, 64); err != nil {
		return Limit{}, fmt.Errorf("quota %q: the soft limit is not a number", s)
	}
	if l.Hard, err = strconv.ParseInt(strings.TrimSpace(hard), 10, 64); err != nil {
		return Limit{}, fmt.Errorf("quota %q: the hard limit is not a number", s)
	}
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("quota %q: %v", s, err)
	}
	return l, nil
}

// Resolve returns the first limit set among ls, nearest scope first (a
// state's own, then the defaults above it), and whether one was: none
// set means unlimited.
func Resolve(ls ...*Limit) (Limit, bool) {
	for _, l := range ls {
		if l != nil {
			return *l, true
		}
	}
	return Limit{Unlimited: true}, false
}

// Level is how a count stands against a limit.
type Level string

// Levels of a Verdict: what happens to the change counted.
const (
	Within Level = "within" // allowed
	// Warn: allowed with a warning, above the soft limit (at or below the
	// hard one), or above the hard limit without growing.
	Warn Level = "warn"
	// Exceed: refused, growing past the hard limit.
	Exceed Level = "exceed"
)

// Scope kinds a Verdict names.
const (
	ScopeState       = "state"
	ScopeEnvironment = "environment"
)

// Verdict is the outcome of counting one scope against its limit.
type Verdict struct {
	Scope   string `json:"scope"`  // ScopeState or ScopeEnvironment
	Target  string `json:"target"` // the state's or the environment's name
	Level   Level  `json:"level"`
	Current int64  `json:"current"` // managed instances now
	Result  int64  `json:"result"`  // managed instances after the change
	Limit   Limit  `json:"limit"`
	// Remaining is the headroom left after the change (Hard - Result),
	// negative when above; -1 with an unlimited limit.
	Remaining int64 `json:"remaining"`
}

// Check counts a scope: current managed instances, the change's delta,
// and its limit. Exactly the hard limit is allowed; a change that leaves
// more is refused (Exceed) only when it grows the scope: a scope already
// above its hard limit (the limit was lowered) may still change and
// shrink, with a warning, so that the way back into the limit is never
// blocked. Restoring an archived state is counted as a change adding its
// instances to its environment.
func Check(scope, target string, current, delta int64, l Limit) Verdict {
	v := Verdict{Scope: scope, Target: target, Current: current, Result: max(0, current+delta), Limit: l, Level: Within, Remaining: -1}
	if l.Unlimited {
		return v
	}
	v.Remaining = l.Hard - v.Result
	switch {
	case v.Result > l.Hard && v.Result > v.Current:
		v.Level = Exceed
	case v.Result > l.Hard, l.Soft > 0 && v.Result > l.Soft:
		v.Level = Warn
	}
	return v
}

// Refused reports whether the verdict refuses the change.
func (v Verdict) Refused() bool { return v.Level == Exceed }

// Message says the verdict in one sentence: "state prod.network: 101
// managed instances would exceed the hard limit of 100 (soft 80)".
func (v Verdict) Message() string {
	what := fmt.Sprintf("%s %s: %d managed instance(s)", v.Scope, v.Target, v.Result)
	switch v.Level {
	case Exceed:
		return fmt.Sprintf("%s would exceed the hard limit of %d%s", what, v.Limit.Hard, softNote(v.Limit))
	case Warn:
		if v.Result > v.Limit.Hard {
			return fmt.Sprintf("%s is above the hard limit of %d; allowed because it does not grow (%d to remove to get back within it)", what, v.Limit.Hard, -v.Remaining)
		}
		return fmt.Sprintf("%s is above the soft limit of %d (hard %d, %d left)", what, v.Limit.Soft, v.Limit.Hard, v.Remaining)
	case Within:
		if v.Limit.Unlimited {
			return what + ", no limit"
		}
		return fmt.Sprintf("%s, within %s (%d left)", what, v.Limit, v.Remaining)
	}
	return what
}

func softNote(l Limit) string {
	if l.Soft > 0 {
		return fmt.Sprintf(" (soft %d)", l.Soft)
	}
	return ""
}

// Worst returns the most severe of vs (Exceed over Warn over Within), the
// first one when they tie; the zero Verdict for none.
func Worst(vs ...Verdict) Verdict {
	rank := map[Level]int{Within: 0, Warn: 1, Exceed: 2}
	var w Verdict
	for i, v := range vs {
		if i == 0 || rank[v.Level] > rank[w.Level] {
			w = v
		}
	}
	return w
}

package retention_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/retention"
)

func TestMain(m *testing.M) { testpg.Main(m) }

func TestPolicyFor(t *testing.T) {
	server := retention.RetentionPolicy{Scope: retention.RetentionServer, KeepLast: 100}
	env := retention.RetentionPolicy{Scope: retention.RetentionEnvironment, Target: "env_prod", KeepDays: 30}
	state := retention.RetentionPolicy{Scope: retention.RetentionState, Target: "ws_a.env_prod.net"}
	other := retention.RetentionPolicy{Scope: retention.RetentionState, Target: "local", KeepLast: 5}
	all := []retention.RetentionPolicy{state, env, other, server}
	tests := []struct {
		name     string
		policies []retention.RetentionPolicy
		want     *retention.RetentionPolicy
	}{
		{"ws_a.env_prod.net", all, &state},
		{"ws_a.env_prod.db", all, &env},
		{"ws_a.env_dev.db", all, &server},
		{"local", all, &other},
		{"env_prod", all, &server}, // a local name is in no environment
		{"local2", []retention.RetentionPolicy{other}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := retention.PolicyFor(tt.policies, tt.name)
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("PolicyFor(%s) = %+v, want %+v", tt.name, got, tt.want)
			}
		})
	}
	if !state.KeepsAll() || state.String() != "state:ws_a.env_prod.net keep everything" || env.String() != "environment:env_prod keep_days=30" {
		t.Errorf("KeepsAll %v, String %q, %q", state.KeepsAll(), state.String(), env.String())
	}
}

func TestValidRetentionPolicy(t *testing.T) {
	tests := []struct {
		p  retention.RetentionPolicy
		ok bool
	}{
		{retention.RetentionPolicy{Scope: retention.RetentionServer, KeepLast: 10}, true},
		{retention.RetentionPolicy{Scope: retention.RetentionServer, Target: "x"}, false},
		{retention.RetentionPolicy{Scope: retention.RetentionEnvironment, Target: "env_1a"}, true},
		{retention.RetentionPolicy{Scope: retention.RetentionEnvironment, Target: "prod"}, false},
		{retention.RetentionPolicy{Scope: retention.RetentionState, Target: "a/b"}, false},
		{retention.RetentionPolicy{Scope: retention.RetentionState, Target: "net", KeepDays: -1}, false},
		{retention.RetentionPolicy{Scope: "galaxy"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.p.String(), func(t *testing.T) {
			err := retention.ValidRetentionPolicy(&tt.p)
			if (err == nil) != tt.ok || err != nil && !errors.Is(err, kilolock.ErrInvalid) {
				t.Errorf("ValidRetentionPolicy(%+v) = %v, want ok %v", tt.p, err, tt.ok)
			}
		})
	}
}

// TestApplyRetention: on each store, the engine prunes each state by the
// policy that applies to it, keeps a rollback plan's target, a tag and a
// held lock's base, a dry run names what the run then prunes and why each
// other version is kept, and reading a pruned version says so and names
// the nearest versions kept.
func TestApplyRetention(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) { testApplyRetention(t, open(t)) })
	})
}

func testApplyRetention(t *testing.T, st kilolock.Store) {
	ctx := context.Background()
	e := kilolock.NewEngine(st, kilolock.Options{})
	by := kilolock.Caller{Actor: "ops"}
	for _, name := range []string{"a", "b", "exempt"} {
		for i := 1; i <= 8; i++ {
			enginetest.Write(t, e, name, enginetest.TFState(t, true, i, "L", fmt.Sprint(i)))
		}
	}
	for _, p := range []retention.RetentionPolicy{
		{Scope: retention.RetentionServer, KeepLast: 3},
		{Scope: retention.RetentionState, Target: "b", KeepLast: 6},
		{Scope: retention.RetentionState, Target: "exempt"},
	} {
		if _, err := retention.SetRetentionPolicy(ctx, e, by, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := retention.SetRetentionPolicy(ctx, e, by, retention.RetentionPolicy{Scope: retention.RetentionState, Target: "b", KeepLast: -2}); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("a negative keep_last = %v, want ErrInvalid", err)
	}
	// A rollback plan of a to @2 pins @2.
	if _, err := history.PlanRollback(ctx, e, "a", enginetest.MustRef(t, "@2")); err != nil {
		t.Fatal(err)
	}
	// b's @7 is tagged, and a plan holds b's current @8 as its base.
	if _, err := history.SetTag(ctx, e, "b", "before-upgrade", enginetest.MustRef(t, "@7"), history.TagOptions{By: kilolock.Caller{Actor: "alice"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Lock(ctx, "b", kilolock.LockInfo{ID: "plan-1", Operation: kilolock.OperationPlan, Who: "bob"}); err != nil {
		t.Fatal(err)
	}
	dry, err := retention.ApplyRetention(ctx, e, retention.RetentionOptions{DryRun: true, By: by})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string][]string{}
	for _, sp := range dry.States {
		for _, k := range sp.Kept {
			kept[sp.State] = append(kept[sp.State], k.String())
		}
	}
	wantKept := map[string][]string{
		"a": {"@8 current: the state's current version", "@6-@8 keep_last: server keep_last=3: the newest 3", "@2 pin: rollback plan, pinned until "},
		"b": {"@8 current: the state's current version", "@3-@8 keep_last: state:b keep_last=6: the newest 6", "@8 lock_base: lock plan-1 by bob (OperationTypePlan) reads from its base", "@7 tag: tag before-upgrade"},
	}
	for name, want := range wantKept {
		got := kept[name]
		if len(got) != len(want) {
			t.Errorf("dry run of %s keeps %q, want %q", name, got, want)
			continue
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Errorf("dry run of %s keeps %q, want %q", name, got[i], want[i])
			}
		}
	}
	want := map[string][]int64{"a": {1, 3, 4, 5}, "b": {1, 2}, "exempt": nil}
	check := func(rep *retention.RetentionReport) {
		t.Helper()
		got := map[string][]int64{"exempt": nil}
		for _, sp := range rep.States {
			got[sp.State] = sp.Versions
		}
		for name, w := range want {
			if !slices.Equal(got[name], w) {
				t.Errorf("dry run %v: state %s pruned %v, want %v", rep.DryRun, name, got[name], w)
			}
		}
	}
	check(dry)
	rep, err := retention.ApplyRetention(ctx, e, retention.RetentionOptions{By: by, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	check(rep)
	if rep.Versions != 6 {
		t.Errorf("pruned %d versions in all, want 6", rep.Versions)
	}
	// The plan can still be applied, and every kept version reads back.
	if _, err := history.Rollback(ctx, e, "a", enginetest.MustRef(t, "@2"), history.RollbackOptions{Actor: "alice"}); err != nil {
		t.Errorf("the rollback planned before retention ran: %v", err)
	}
	if _, err := e.ReadVersion(ctx, "a", 3); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("a pruned version reads %v, want ErrNotFound", err)
	}
	_, err = history.Show(ctx, e, "a", enginetest.MustRef(t, "@4"))
	var nf *kilolock.VersionNotFoundError
	if !errors.As(err, &nf) || nf.Pruned == nil || nf.First != 2 ||
		!strings.HasPrefix(err.Error(), "state a has no version @4: retention pruned @3…@5 (by ops at ") ||
		!strings.HasSuffix(err.Error(), "policy server keep_last=3); the nearest kept are @2 and @6; it has versions @2, @6…@9 (serials 2…9)") ||
		!slices.Equal(nf.Nearest, []int64{2, 6}) {
		t.Errorf("Show(@4) of a pruned version = %v", err)
	}
	if _, err := history.Show(ctx, e, "b", enginetest.MustRef(t, "@1")); !errors.As(err, &nf) || nf.First != 3 || !slices.Equal(nf.Nearest, []int64{3}) ||
		!strings.HasSuffix(err.Error(), "the nearest kept are @3; it has versions @3…@8 (serials 3…8)") {
		t.Errorf("Show(@1) of a pruned first version = %v", err)
	}
	marks, err := retention.PrunedVersions(ctx, e, "a", 0, 0)
	if err != nil || len(marks) != 2 || marks[0].From != 3 || marks[0].To != 5 || marks[1].From != 1 || marks[0].PrunedBy != "ops" {
		t.Errorf("PrunedVersions(a) = %+v, %v; want @3-@5 and @1 by ops", marks, err)
	}
	if _, err := retention.ApplyRetention(ctx, e, retention.RetentionOptions{State: "missing"}); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("retention of a missing state = %v, want ErrNotFound", err)
	}
}

package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// quotaFixture is a store that keeps quotas and tenants, with workspace
// acme and its environments prod and dev.
type quotaFixture struct {
	s         kilolock.Store
	qs        kilolock.QuotaStore
	ts        tenancy.TenantStore
	ws        string
	prod, dev string // public ids
}

func newQuotaFixture(t *testing.T, open Opener) *quotaFixture {
	t.Helper()
	s := open(t)
	qs, ok := s.(kilolock.QuotaStore)
	if !ok {
		t.Skip("the store does not implement kilolock.QuotaStore")
	}
	ts, ok := s.(tenancy.TenantStore)
	if !ok {
		t.Skip("the store does not implement tenancy.TenantStore")
	}
	ctx := context.Background()
	f := &quotaFixture{s: s, qs: qs, ts: ts, ws: kilolock.NewID("ws_")}
	must(t, ts.CreateWorkspace(ctx, &tenancy.Workspace{ID: f.ws, Name: "acme", Kind: tenancy.WorkspaceOrganization}))
	for _, e := range []*string{&f.prod, &f.dev} {
		*e = kilolock.NewID("env_")
		must(t, ts.CreateEnvironment(ctx, &tenancy.Environment{PublicID: *e, Slug: map[*string]string{&f.prod: "prod", &f.dev: "dev"}[e], WorkspaceID: f.ws}))
	}
	return f
}

// state is the internal name of state in environment env.
func (f *quotaFixture) state(t testing.TB, env, state string) string {
	t.Helper()
	name, err := tenancy.TenantStateName(f.ws, env, state)
	must(t, err)
	return name
}

func (f *quotaFixture) set(t testing.TB, scope kilolock.QuotaScope, target string, l *quota.Limit) {
	t.Helper()
	must(t, f.qs.SetQuota(context.Background(), kilolock.QuotaTarget{Scope: scope, Target: target}, l))
}

// grow commits n new managed instances (terraform_data.NAME[i], counted
// from the state's current instances) to state name, with def the
// server's default, and returns the version, the commit (its
// QuotaWarnings) and the error.
func (f *quotaFixture) grow(t testing.TB, name string, n int, def *quota.Limit) (*kilolock.Version, *kilolock.Commit, error) {
	t.Helper()
	c := f.growth(t, name, n, def)
	v, _, err := f.s.Commit(context.Background(), name, c)
	return v, c, err
}

// growth is the commit grow makes.
func (f *quotaFixture) growth(t testing.TB, name string, n int, def *quota.Limit) *kilolock.Commit {
	t.Helper()
	c := next(t, f.s, name)
	c.DefaultQuota = def
	have := 0
	if st, err := f.s.State(context.Background(), name); err == nil && st.Current > 0 {
		snap, err := f.s.Snapshot(context.Background(), name, st.Current)
		must(t, err)
		have = len(snap.Instances)
	}
	r := resource("terraform_data", "grown")
	for i := range n {
		c.Upserts = append(c.Upserts, instance(t, r, intKey(int64(have+i)), fmt.Sprintf(`{"id":"%d"}`, have+i)))
	}
	return c
}

func (f *quotaFixture) mustGrow(t testing.TB, name string, n int) *kilolock.Version {
	t.Helper()
	v, _, err := f.grow(t, name, n, nil)
	if err != nil {
		t.Fatalf("grow %s by %d: %v", name, n, err)
	}
	return v
}

func (f *quotaFixture) status(t testing.TB, name string, delta int64, def *quota.Limit) *kilolock.QuotaStatus {
	t.Helper()
	st, err := f.qs.QuotaStatus(context.Background(), name, delta, def)
	must(t, err)
	return st
}

// refusedBy asserts that err is a quota's refusal of scope target, going
// from current to result.
func refusedBy(t testing.TB, err error, scope, target string, current, result int64) *kilolock.QuotaError {
	t.Helper()
	qe := errorAs[*kilolock.QuotaError](t, err)
	errorIs(t, err, kilolock.ErrQuotaExceeded)
	if r := qe.Refused; r.Scope != scope || r.Target != target || r.Current != current || r.Result != result || r.Level != quota.Exceed {
		t.Errorf("refused %+v, want %s %s from %d to %d", r, scope, target, current, result)
	}
	return qe
}

func limit(soft, hard int64) *quota.Limit { return &quota.Limit{Soft: soft, Hard: hard} }

// testQuotas checks the optional kilolock.QuotaStore: what counts, the
// boundaries, where limits come from, the environment's sum and its lock,
// and the refusals and warnings kept.
func testQuotas(t *testing.T, open Opener) {
	t.Run("counting", func(t *testing.T) { testQuotaCounting(t, open) })
	t.Run("boundary", func(t *testing.T) { testQuotaBoundary(t, open) })
	t.Run("precedence", func(t *testing.T) { testQuotaPrecedence(t, open) })
	t.Run("environment", func(t *testing.T) { testQuotaEnvironment(t, open) })
	t.Run("environment lock", func(t *testing.T) { testQuotaEnvironmentLock(t, open) })
	t.Run("restore lock", func(t *testing.T) { testQuotaRestoreLock(t, open) })
	t.Run("settings", func(t *testing.T) { testQuotaSettings(t, open) })
}

// testQuotaCounting is the table of what a commit counts, from its
// changes: managed resources' current objects, not data sources, not
// deposed objects.
func testQuotaCounting(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	ctx := context.Background()
	const name = "counted"
	web := resource("aws_instance", "web")
	ami := graph.Resource{Mode: "data", Type: "aws_ami", Name: "ubuntu", Provider: `provider["registry.opentofu.org/hashicorp/aws"]`}
	mod := graph.Resource{Module: `module.app["blue"]`, Mode: "managed", Type: "terraform_data", Name: "x", Provider: `provider["terraform.io/builtin/terraform"]`}
	deposed := func(r graph.Resource, key graph.IndexKey, dk, attrs string) graph.Instance {
		return newInstance(t, r, object(key, "", dk, attrs, nil))
	}
	steps := []struct {
		name    string
		upserts []graph.Instance
		removed []string
		managed int // after the step
	}{
		{"two managed, one data source", []graph.Instance{instance(t, web, intKey(0), `{"id":"a"}`), instance(t, web, intKey(1), `{"id":"b"}`), instance(t, ami, graph.IndexKey{}, `{"id":"ami"}`)}, nil, 2},
		{"a managed instance in a module", []graph.Instance{instance(t, mod, graph.IndexKey{}, `{"id":"m"}`)}, nil, 3},
		{"an update counts nothing", []graph.Instance{instance(t, web, intKey(0), `{"id":"a2"}`)}, nil, 3},
		{"create_before_destroy: the new object and the deposed old one", []graph.Instance{instance(t, web, intKey(1), `{"id":"b2"}`), deposed(web, intKey(1), "0000000b", `{"id":"b"}`)}, nil, 3},
		{"the deposed object destroyed", nil, []string{"aws_instance.web[1] (deposed object 0000000b)"}, 3},
		{"the data source removed", nil, []string{"data.aws_ami.ubuntu"}, 3},
		{"a managed instance removed", nil, []string{"aws_instance.web[0]"}, 2},
		{"removing what is not there counts nothing", nil, []string{"aws_instance.web[9]", "data.aws_ami.other"}, 2},
		{"a data source added", []graph.Instance{instance(t, ami, graph.IndexKey{}, `{"id":"ami2"}`)}, nil, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			c := next(t, f.s, name)
			c.Upserts, c.Removed = st.upserts, st.removed
			v := commit(t, f.s, name, c)
			if v.Managed != st.managed {
				t.Errorf("version %d counts %d managed, want %d", v.Number, v.Managed, st.managed)
			}
			hist, err := f.s.History(ctx, name, kilolock.HistoryOptions{Limit: 1})
			must(t, err)
			if hist[0].Managed != st.managed {
				t.Errorf("History says %d managed, want %d", hist[0].Managed, st.managed)
			}
			if got := f.status(t, name, 0, nil); got.Counts[0].Current != int64(st.managed) || !got.Exists {
				t.Errorf("QuotaStatus = %+v, want %d managed", got, st.managed)
			}
		})
	}
	if st := f.status(t, "never-written", 3, limit(0, 2)); st.Exists || st.Counts[0].Current != 0 || st.Level != quota.Exceed {
		t.Errorf("QuotaStatus of a state without versions = %+v, want 0 and exceed", st)
	}
}

// testQuotaBoundary: exactly hard is allowed, one more refused with
// nothing written; above soft warns and is kept; a state above a lowered
// limit may shrink but not grow; a replacement at the limit passes.
func testQuotaBoundary(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	ctx := context.Background()
	const name = "bounded"
	f.set(t, kilolock.QuotaState, name, limit(2, 4))
	f.mustGrow(t, name, 2)
	if _, c, err := f.grow(t, name, 2, nil); err != nil || len(c.QuotaWarnings) != 1 || c.QuotaWarnings[0].Result != 4 || c.QuotaWarnings[0].Level != quota.Warn {
		t.Fatalf("growing to exactly the hard limit: %v, warnings %+v; want allowed with one warning at 4", err, c.QuotaWarnings)
	}
	warned := f.status(t, name, 0, nil).LatestWarning
	if warned == nil || warned.Version != 2 || warned.Result != 4 || warned.Limit.Soft != 2 || warned.Limit.Hard != 4 || warned.From != kilolock.LimitFromState {
		t.Errorf("latest warning = %+v, want version 2 at 4 (soft 2, hard 4)", warned)
	}

	before := freeze(t, f.s, name)
	_, c, err := f.grow(t, name, 1, nil)
	qe := refusedBy(t, err, quota.ScopeState, name, 4, 5)
	if qe.Refused.Limit.Hard != 4 || qe.Refused.Limit.Soft != 2 || qe.Refused.From != kilolock.LimitFromState || qe.State != name {
		t.Errorf("refusal %+v, want the state's own soft 2, hard 4", qe)
	}
	if len(c.QuotaWarnings) != 0 {
		t.Errorf("a refused commit has warnings %+v", c.QuotaWarnings)
	}
	before.unchanged(t, f.s, name)

	// A replacement that deposes its old object holds one more object
	// while it runs, and counts none.
	snap, err := f.s.Snapshot(ctx, name, state(t, f.s, name).Current)
	must(t, err)
	old := snap.Instances[0]
	rc := next(t, f.s, name)
	rc.Upserts = []graph.Instance{newInstance(t, old.Resource, object(old.Key, "", "", `{"id":"replaced"}`, nil)), newInstance(t, old.Resource, object(old.Key, "", "0000cafe", `{"id":"old"}`, nil))}
	if v := commit(t, f.s, name, rc); v.Managed != 4 || v.Instances != 5 {
		t.Errorf("a replacement at the limit: %d managed of %d objects, want 4 of 5", v.Managed, v.Instances)
	}

	ev := &kilolock.QuotaEvent{Verdict: qe.Refused.Verdict, From: qe.Refused.From, LockID: "lock-1", Actor: "alice"}
	must(t, f.qs.RecordQuotaRefusal(ctx, name, ev))
	got := f.status(t, name, 0, nil).LatestRefusal
	if got == nil || got.ID != ev.ID || got.Result != 5 || got.Level != quota.Exceed || got.Actor != "alice" || got.LockID != "lock-1" || got.Version != 0 || !got.Created.Equal(ev.Created) {
		t.Errorf("latest refusal = %+v, want %+v", got, ev)
	}
	errorIs(t, f.qs.RecordQuotaRefusal(ctx, "missing", &kilolock.QuotaEvent{Verdict: qe.Refused.Verdict}), kilolock.ErrNotFound)

	// The limit lowered below the count: shrinking is allowed (warned),
	// growing is not, and a commit that adds nothing is not counted.
	f.set(t, kilolock.QuotaState, name, limit(0, 1))
	rm := next(t, f.s, name)
	rm.Removed = []string{snap.Instances[1].ID()}
	if v := commit(t, f.s, name, rm); v.Managed != 3 {
		t.Errorf("shrinking above the limit: %d managed, want 3", v.Managed)
	}
	_, _, err = f.grow(t, name, 1, nil)
	refusedBy(t, err, quota.ScopeState, name, 3, 4)
	if st := f.status(t, name, -1, nil); st.Level != quota.Warn || st.Counts[0].Result != 2 {
		t.Errorf("a delta of -1 at 3 of 1: %+v, want warn at 2", st.Counts)
	}
}

// testQuotaPrecedence: a state's own limit, else its workspace's default
// for states, else the server's; an explicit unlimited stops the search.
func testQuotaPrecedence(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	a, b := f.state(t, f.prod, "a"), f.state(t, f.prod, "b")
	server := limit(0, 1)
	f.mustGrow(t, a, 1)
	_, _, err := f.grow(t, a, 1, server)
	refusedBy(t, err, quota.ScopeState, a, 1, 2)
	if st := f.status(t, a, 1, server); st.Counts[0].From != kilolock.LimitFromServer {
		t.Errorf("from %q, want %q", st.Counts[0].From, kilolock.LimitFromServer)
	}

	f.set(t, kilolock.QuotaWorkspaceStates, f.ws, limit(0, 3))
	if _, _, err := f.grow(t, a, 2, server); err != nil {
		t.Errorf("the workspace's default of 3 over the server's 1: %v", err)
	}
	_, _, err = f.grow(t, b, 4, server)
	qe := refusedBy(t, err, quota.ScopeState, b, 0, 4)
	if qe.Refused.From != kilolock.LimitFromWorkspace || qe.Refused.Limit.Hard != 3 {
		t.Errorf("refused by %+v, want the workspace's default of 3", qe.Refused)
	}

	f.set(t, kilolock.QuotaState, b, &quota.Limit{Unlimited: true})
	if _, _, err := f.grow(t, b, 4, server); err != nil {
		t.Errorf("an unlimited state under a workspace default: %v", err)
	}
	f.set(t, kilolock.QuotaState, a, limit(0, 10))
	if _, _, err := f.grow(t, a, 5, server); err != nil {
		t.Errorf("the state's own 10 over the workspace's 3: %v", err)
	}
	if st := f.status(t, a, 0, server); st.Counts[0].From != kilolock.LimitFromState || st.Counts[0].Current != 8 || st.Counts[0].Remaining != 2 {
		t.Errorf("status %+v, want 8 of the state's own 10", st.Counts[0])
	}

	// A state of the local lane knows no workspace.
	if _, _, err := f.grow(t, "local", 2, server); err == nil {
		t.Error("the server's default did not apply to a local state")
	}
	if st := f.status(t, "local", 0, nil); len(st.Counts) != 1 || st.Environment != "" || st.Counts[0].From != kilolock.LimitFromNone {
		t.Errorf("a local state's status: %+v", st)
	}
}

// testQuotaEnvironment: an environment's limit counts its active states,
// each version's count kept; archived states and other environments do
// not count; the workspace's default for environments applies; restoring
// an archived state that would pass it is refused with the numbers.
func testQuotaEnvironment(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	ctx := context.Background()
	a, b := f.state(t, f.prod, "a"), f.state(t, f.prod, "b.with.dots")
	other := f.state(t, f.dev, "a")
	f.set(t, kilolock.QuotaWorkspaceEnvironments, f.ws, limit(4, 5))
	f.mustGrow(t, a, 3)
	_, c, err := f.grow(t, b, 2, nil)
	if err != nil || len(c.QuotaWarnings) != 1 || c.QuotaWarnings[0].Scope != quota.ScopeEnvironment || c.QuotaWarnings[0].Target != f.prod {
		t.Fatalf("prod at 5 of 5: %v, warnings %+v; want one warning for prod", err, c.QuotaWarnings)
	}
	_, _, err = f.grow(t, b, 1, nil)
	qe := refusedBy(t, err, quota.ScopeEnvironment, f.prod, 5, 6)
	if qe.Refused.From != kilolock.LimitFromWorkspace || qe.State != b {
		t.Errorf("refusal %+v, want the workspace's default", qe)
	}
	if st := f.status(t, b, 1, nil); st.Environment != f.prod || len(st.Counts) != 2 || st.Counts[1].Current != 5 || st.Level != quota.Exceed {
		t.Errorf("status %+v, want prod at 5, exceeded by one more", st)
	}
	f.mustGrow(t, other, 5) // dev has a sum of its own

	must(t, f.ts.SetStateLifecycle(ctx, a, tenancy.LifecycleArchived))
	if _, _, err := f.grow(t, b, 3, nil); err != nil {
		t.Errorf("with a archived, prod holds 2: growing b by 3: %v", err)
	}
	if st := f.status(t, a, 0, nil); !st.Archived || len(st.Counts) != 1 {
		t.Errorf("an archived state's status: %+v, want its own count only", st)
	}
	// Restoring a (3) into prod at 5 of 5 would pass the limit: refused
	// with the numbers, a left archived.
	err = f.ts.SetStateLifecycle(ctx, a, tenancy.LifecycleActive)
	qe = refusedBy(t, err, quota.ScopeEnvironment, f.prod, 5, 8)
	if !qe.Restore || qe.State != a || !strings.Contains(qe.Error(), "from 5 to 8") || !strings.Contains(qe.Error(), "holds 3") ||
		!strings.Contains(qe.Error(), "hard limit of 5") || !strings.Contains(qe.Hint(), "stays archived") {
		t.Errorf("the refused restore: %v (hint %q); want its numbers and what to do", qe, qe.Hint())
	}
	if l, err := f.ts.StateLifecycle(ctx, a); err != nil || l != tenancy.LifecycleArchived {
		t.Errorf("a refused restore left a %s, %v", l, err)
	}
	if st := f.status(t, b, 0, nil); st.Counts[1].Current != 5 {
		t.Errorf("after a refused restore prod holds %d, want 5", st.Counts[1].Current)
	}
	// With b archived there is room: exactly the limit is allowed.
	must(t, f.ts.SetStateLifecycle(ctx, b, tenancy.LifecycleArchived))
	must(t, f.ts.SetStateLifecycle(ctx, a, tenancy.LifecycleActive))
	refusedBy(t, f.ts.SetStateLifecycle(ctx, b, tenancy.LifecycleActive), quota.ScopeEnvironment, f.prod, 3, 8)
	must(t, f.ts.SetStateLifecycle(ctx, a, tenancy.LifecycleActive)) // already active: nothing to count

	f.set(t, kilolock.QuotaEnvironment, f.prod, &quota.Limit{Unlimited: true})
	must(t, f.ts.SetStateLifecycle(ctx, b, tenancy.LifecycleActive))
	if _, _, err := f.grow(t, b, 1, nil); err != nil {
		t.Errorf("prod unlimited over the workspace's default: %v", err)
	}
}

// testQuotaRestoreLock: a restore of an archived state and a commit to
// another state of its environment, at once, each within the
// environment's limit alone, never both pass it.
func testQuotaRestoreLock(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	ctx := context.Background()
	const rounds = 12
	f.set(t, kilolock.QuotaEnvironment, f.prod, limit(0, 3))
	for round := range rounds {
		a, b := f.state(t, f.prod, fmt.Sprintf("a%d", round)), f.state(t, f.prod, fmt.Sprintf("b%d", round))
		f.mustGrow(t, a, 2)
		must(t, f.ts.SetStateLifecycle(ctx, a, tenancy.LifecycleArchived))
		f.mustGrow(t, b, 0)
		c := f.growth(t, b, 2, nil)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			commit  error
			restore error
		)
		wg.Go(func() { <-start; _, _, commit = f.s.Commit(ctx, b, c) })
		wg.Go(func() { <-start; restore = f.ts.SetStateLifecycle(ctx, a, tenancy.LifecycleActive) })
		close(start)
		wg.Wait()
		won := 0
		for what, err := range map[string]error{"commit": commit, "restore": restore} {
			var qe *kilolock.QuotaError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &qe) || qe.Refused.Scope != quota.ScopeEnvironment:
				t.Fatalf("round %d, %s: %v, want success or the environment's refusal", round, what, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of a commit and a restore passed an environment limit that fits one", round, won)
		}
		if st := f.status(t, b, 0, nil); st.Counts[1].Current != 2 {
			t.Fatalf("round %d: prod holds %d, want 2", round, st.Counts[1].Current)
		}
		for _, name := range []string{a, b} {
			must(t, f.ts.SetStateLifecycle(ctx, name, tenancy.LifecycleArchived))
		}
	}
}

// testQuotaEnvironmentLock: commits to two states of one environment at
// once, each within the environment's limit alone, never both pass it.
func testQuotaEnvironmentLock(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	const rounds = 12
	f.set(t, kilolock.QuotaEnvironment, f.prod, limit(0, 3))
	for round := range rounds {
		a, b := f.state(t, f.prod, fmt.Sprintf("a%d", round)), f.state(t, f.prod, fmt.Sprintf("b%d", round))
		// Both states exist, so that both commits only take their own
		// state's row lock.
		f.mustGrow(t, a, 0)
		f.mustGrow(t, b, 0)
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, 2)
		)
		for i, name := range []string{a, b} {
			c := f.growth(t, name, 2, nil)
			wg.Go(func() {
				<-start
				_, _, errs[i] = f.s.Commit(context.Background(), name, c)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			var qe *kilolock.QuotaError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &qe) || qe.Refused.Scope != quota.ScopeEnvironment:
				t.Fatalf("round %d, commit %d: %v, want success or the environment's refusal", round, i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of 2 commits passed an environment limit that fits one", round, won)
		}
		if st := f.status(t, a, 0, nil); st.Counts[1].Current != 2 {
			t.Fatalf("round %d: prod holds %d, want 2", round, st.Counts[1].Current)
		}
		for _, name := range []string{a, b} {
			must(t, f.ts.SetStateLifecycle(context.Background(), name, tenancy.LifecycleArchived))
		}
	}
}

// testQuotaSettings: limits are set, replaced, listed and cleared.
func testQuotaSettings(t *testing.T, open Opener) {
	f := newQuotaFixture(t, open)
	ctx := context.Background()
	f.set(t, kilolock.QuotaState, "s", limit(1, 2))
	f.set(t, kilolock.QuotaState, "s", limit(0, 7))
	f.set(t, kilolock.QuotaEnvironment, f.prod, &quota.Limit{Unlimited: true})
	f.set(t, kilolock.QuotaWorkspaceStates, f.ws, limit(5, 9))
	got, err := f.qs.Quotas(ctx)
	must(t, err)
	want := []kilolock.QuotaSetting{
		{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaEnvironment, Target: f.prod}, Limit: quota.Limit{Unlimited: true}},
		{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "s"}, Limit: quota.Limit{Hard: 7}},
		{QuotaTarget: kilolock.QuotaTarget{Scope: kilolock.QuotaWorkspaceStates, Target: f.ws}, Limit: quota.Limit{Soft: 5, Hard: 9}},
	}
	if len(got) != len(want) {
		t.Fatalf("Quotas = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].QuotaTarget != want[i].QuotaTarget || got[i].Limit != want[i].Limit || got[i].Updated.IsZero() {
			t.Errorf("Quotas[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	f.set(t, kilolock.QuotaState, "s", nil)
	f.set(t, kilolock.QuotaState, "never-set", nil)
	if got, _ := f.qs.Quotas(ctx); len(got) != 2 {
		t.Errorf("after clearing s: %+v", got)
	}
}

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// testTrustPolicies checks the optional trust.PolicyStore: policies kept
// as given (claims, globs, max TTL), listed by environment, found with
// their environment, workspace and the state's hold in one snapshot, and
// gone the moment they are removed. A second store on the same database
// sees them: that is how kld replicas share policies, and what
// TrustAccess reading the database on each request gives.
func testTrustPolicies(t *testing.T, open Opener) {
	st := open(t)
	ps, ok := st.(trust.PolicyStore)
	ts, ok2 := st.(tenancy.TenantStore)
	if !ok || !ok2 {
		t.Skip("the store does not implement trust.PolicyStore")
	}
	ctx := context.Background()
	ws := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "acme", Kind: tenancy.WorkspaceOrganization}
	must(t, ts.CreateWorkspace(ctx, ws))
	env := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}
	must(t, ts.CreateEnvironment(ctx, env))
	other := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "dev", WorkspaceID: ws.ID}
	must(t, ts.CreateEnvironment(ctx, other))

	newPolicy := func(envID string, scope tenancy.Scope) *trust.Policy {
		p, err := trust.NewPolicy(trust.Policy{EnvironmentID: envID, Issuer: "https://token.actions.githubusercontent.com",
			Audience: "https://kl.example.com", Claims: map[string]string{"repository": "org/app"},
			ClaimGlobs: map[string]string{"ref": "refs/heads/*"}, Scope: scope, StatePattern: "app-*", MaxTTL: trust.Duration(15 * time.Minute)})
		must(t, err)
		return p
	}
	p := newPolicy(env.PublicID, tenancy.ScopeReadWrite)
	must(t, ps.CreateTrustPolicy(ctx, p))
	errorIs(t, ps.CreateTrustPolicy(ctx, p), kilolock.ErrConflict)
	errorIs(t, ps.CreateTrustPolicy(ctx, newPolicy("env_0123456789abcdef", tenancy.ScopeRead)), kilolock.ErrNotFound)
	q := newPolicy(other.PublicID, tenancy.ScopeOutputs)
	q.Claims, q.StatePattern = nil, ""
	must(t, ps.CreateTrustPolicy(ctx, q))

	got, err := ps.TrustPolicies(ctx, env.PublicID)
	must(t, err)
	if len(got) != 1 || !samePolicy(got[0], *p) {
		t.Fatalf("TrustPolicies(env) = %+v, want [%+v]", got, *p)
	}
	if all, err := ps.TrustPolicies(ctx, ""); err != nil || len(all) != 2 {
		t.Errorf("TrustPolicies(\"\") = %v, %v; want both", all, err)
	}
	if got, err := ps.TrustPolicies(ctx, other.PublicID); err != nil || len(got) != 1 || got[0].Claims != nil || !samePolicy(got[0], *q) {
		t.Errorf("TrustPolicies(other) = %+v, %v; want [%+v] with no exact claims", got, err, *q)
	}

	state := kilolock.NewID("st_")
	must(t, ts.SetStateLifecycle(ctx, state, tenancy.LifecycleArchived))
	a, err := ps.TrustAccess(ctx, env.PublicID, state)
	must(t, err)
	if a.Environment == nil || a.Environment.PublicID != env.PublicID || a.Workspace == nil || a.Workspace.ID != ws.ID ||
		a.State != tenancy.LifecycleArchived || len(a.Policies) != 1 || !samePolicy(a.Policies[0], *p) {
		t.Errorf("TrustAccess = %+v, want env %s of %s, archived, policy %s", a, env.PublicID, ws.ID, p.ID)
	}
	if a, err := ps.TrustAccess(ctx, "env_0123456789abcdef", state); err != nil || a.Environment != nil || len(a.Policies) != 0 {
		t.Errorf("TrustAccess(missing env) = %+v, %v; want no environment, no policies, no error", a, err)
	}

	errorIs(t, ps.DeleteTrustPolicy(ctx, "trs_0123456789abcdef"), kilolock.ErrNotFound)
	must(t, ps.DeleteTrustPolicy(ctx, p.ID))
	if a, err := ps.TrustAccess(ctx, env.PublicID, "x"); err != nil || a.Environment == nil || len(a.Policies) != 0 || a.State != tenancy.LifecycleActive {
		t.Errorf("TrustAccess after removal = %+v, %v; want the environment, active, no policy", a, err)
	}
}

func samePolicy(a, b trust.Policy) bool {
	eq := func(x, y map[string]string) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if y[k] != v {
				return false
			}
		}
		return true
	}
	return a.ID == b.ID && a.EnvironmentID == b.EnvironmentID && a.Issuer == b.Issuer && a.Audience == b.Audience &&
		eq(a.Claims, b.Claims) && eq(a.ClaimGlobs, b.ClaimGlobs) && a.Scope == b.Scope && a.StatePattern == b.StatePattern &&
		a.MaxTTL == b.MaxTTL && a.Created.Equal(b.Created)
}

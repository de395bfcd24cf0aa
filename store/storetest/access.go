package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// testAccess checks TenantStore.Access: the one read the authenticated
// lane decides on sees every change made before it — a revoked token, a
// removed member, a revoked grant, a suspension, an archived state.
func testAccess(t *testing.T, open Opener) {
	s, ok := open(t).(tenancy.TenantStore)
	if !ok {
		t.Skip("the store does not implement tenancy.TenantStore")
	}
	ctx := context.Background()
	ws := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "acme", Kind: tenancy.WorkspaceOrganization}
	must(t, s.CreateWorkspace(ctx, ws))
	other := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "globex", Kind: tenancy.WorkspaceOrganization}
	must(t, s.CreateWorkspace(ctx, other))
	prod := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}
	dev := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "dev", WorkspaceID: ws.ID}
	theirs := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: other.ID}
	for _, e := range []*tenancy.Environment{prod, dev, theirs} {
		must(t, s.CreateEnvironment(ctx, e))
	}
	must(t, s.PutMember(ctx, ws.ID, tenancy.Member{UserID: "alice", Role: tenancy.RoleMember}))
	auto, autoSecret, _ := tenancy.NewToken(tenancy.TokenAutomation)
	auto.EnvironmentID, auto.Scope = prod.PublicID, tenancy.ScopeReadWrite
	must(t, s.CreateToken(ctx, auto))
	pat, patSecret, _ := tenancy.NewToken(tenancy.TokenPersonal)
	pat.UserID = "alice"
	must(t, s.CreateToken(ctx, pat))
	must(t, s.PutGrant(ctx, &tenancy.Grant{TokenID: pat.ID, EnvironmentID: prod.PublicID}))

	access := func(secret, wsID, env string) *tenancy.Access {
		t.Helper()
		name := wsID + "." + env + ".network"
		a, err := s.Access(ctx, tenancy.AccessRequest{Hash: tenancy.HashSecret(secret), WorkspaceID: wsID, Environment: env, StateName: name})
		must(t, err)
		return a
	}
	// summary keeps what the lane decides on, for comparison.
	type summary struct {
		Token, Workspace, Lifecycle, Env, Home string
		Member, Granted                        bool
		State                                  tenancy.Lifecycle
	}
	sum := func(a *tenancy.Access) summary {
		var s summary
		if a.Token != nil {
			s.Token = a.Token.ID
		}
		if a.Workspace != nil {
			s.Workspace, s.Lifecycle = a.Workspace.ID, string(a.Workspace.Lifecycle)
		}
		if a.Environment != nil {
			s.Env = a.Environment.PublicID
			if a.Environment.WorkspaceID != ws.ID && a.Environment.WorkspaceID != other.ID {
				t.Errorf("Environment.WorkspaceID = %q", a.Environment.WorkspaceID)
			}
		}
		if a.Home != nil {
			s.Home = a.Home.PublicID
		}
		s.Member, s.Granted, s.State = a.Member, a.Granted, a.State
		return s
	}
	check := func(label string, a *tenancy.Access, want summary) {
		t.Helper()
		if diff := cmp.Diff(want, sum(a)); diff != "" {
			t.Errorf("%s: Access (-want +got):\n%s", label, diff)
		}
	}
	active := tenancy.LifecycleActive

	check("unknown secret", access("klt_nope", ws.ID, prod.PublicID), summary{State: active})
	check("automation, own path", access(autoSecret, ws.ID, prod.PublicID),
		summary{Token: auto.ID, Workspace: ws.ID, Lifecycle: "active", Env: prod.PublicID, Home: prod.PublicID, State: active})
	check("automation, slug", access(autoSecret, ws.ID, "prod"),
		summary{Token: auto.ID, Workspace: ws.ID, Lifecycle: "active", Env: prod.PublicID, Home: prod.PublicID, State: active})
	check("automation, other workspace", access(autoSecret, other.ID, theirs.PublicID),
		summary{Token: auto.ID, Workspace: other.ID, Lifecycle: "active", Env: theirs.PublicID, Home: prod.PublicID, State: active})
	check("automation, env of another workspace", access(autoSecret, ws.ID, theirs.PublicID),
		summary{Token: auto.ID, Workspace: ws.ID, Lifecycle: "active", Home: prod.PublicID, State: active})
	check("automation, missing workspace", access(autoSecret, "ws_missing", prod.PublicID),
		summary{Token: auto.ID, Home: prod.PublicID, State: active})
	check("pat, granted", access(patSecret, ws.ID, prod.PublicID),
		summary{Token: pat.ID, Workspace: ws.ID, Lifecycle: "active", Env: prod.PublicID, Member: true, Granted: true, State: active})
	check("pat, slug of granted env", access(patSecret, ws.ID, "prod"),
		summary{Token: pat.ID, Workspace: ws.ID, Lifecycle: "active", Env: prod.PublicID, Member: true, Granted: true, State: active})
	check("pat, ungranted env", access(patSecret, ws.ID, dev.PublicID),
		summary{Token: pat.ID, Workspace: ws.ID, Lifecycle: "active", Env: dev.PublicID, Member: true, State: active})
	check("pat, not a member", access(patSecret, other.ID, theirs.PublicID),
		summary{Token: pat.ID, Workspace: other.ID, Lifecycle: "active", Env: theirs.PublicID, State: active})

	// Every change counts from the next read.
	must(t, s.RemoveMember(ctx, ws.ID, "alice"))
	check("pat, member removed", access(patSecret, ws.ID, prod.PublicID),
		summary{Token: pat.ID, Workspace: ws.ID, Lifecycle: "active", Env: prod.PublicID, Granted: true, State: active})
	must(t, s.PutMember(ctx, ws.ID, tenancy.Member{UserID: "alice", Role: tenancy.RoleMember}))
	must(t, s.DeleteGrant(ctx, pat.ID, prod.PublicID))
	check("pat, grant revoked", access(patSecret, ws.ID, prod.PublicID),
		summary{Token: pat.ID, Workspace: ws.ID, Lifecycle: "active", Env: prod.PublicID, Member: true, State: active})
	must(t, s.SetWorkspaceLifecycle(ctx, ws.ID, tenancy.LifecycleSuspended))
	must(t, s.SetStateLifecycle(ctx, ws.ID+"."+prod.PublicID+".network", tenancy.LifecycleArchived))
	check("automation, suspended and archived", access(autoSecret, ws.ID, prod.PublicID),
		summary{Token: auto.ID, Workspace: ws.ID, Lifecycle: "suspended", Env: prod.PublicID, Home: prod.PublicID, State: tenancy.LifecycleArchived})
	must(t, s.DeleteToken(ctx, auto.ID))
	check("automation, revoked", access(autoSecret, ws.ID, prod.PublicID), summary{State: active})

	a := access(patSecret, ws.ID, prod.PublicID)
	if a.Token.Kind != tenancy.TokenPersonal || a.Token.UserID != "alice" || !a.Token.Hash.Equal(pat.Hash) || a.Token.Created.IsZero() || !a.Token.Expires.IsZero() {
		t.Errorf("Access.Token = %+v", a.Token)
	}

	// An expiry is kept to the microsecond and read back by every lookup.
	expires := time.Date(2031, 2, 3, 4, 5, 6, 789012345, time.UTC)
	brief, briefSecret, _ := tenancy.NewToken(tenancy.TokenPersonal)
	brief.UserID, brief.Expires = "alice", expires
	must(t, s.CreateToken(ctx, brief))
	want := expires.Truncate(time.Microsecond)
	if got := access(briefSecret, ws.ID, prod.PublicID).Token.Expires; !got.Equal(want) {
		t.Errorf("Access: Expires = %v, want %v", got, want)
	}
	if found, err := s.TokenByHash(ctx, brief.Hash); err != nil || !found.Expires.Equal(want) {
		t.Errorf("TokenByHash: Expires = %v, %v; want %v", found.Expires, err, want)
	}
	if all, err := s.Tokens(ctx, tenancy.TokenPersonal); err != nil || len(all) != 2 {
		t.Errorf("Tokens = %+v, %v", all, err)
	} else {
		for _, tok := range all {
			if tok.ID == brief.ID && !tok.Expires.Equal(want) || tok.ID == pat.ID && !tok.Expires.IsZero() {
				t.Errorf("Tokens: %s expires %v", tok.ID, tok.Expires)
			}
		}
	}
}

package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// testTenant checks the optional tenancy.TenantStore: workspaces,
// environments, members, tokens found only by their hash, grants that go
// with their token, state lifecycles and the audit log.
func testTenant(t *testing.T, open Opener) {
	s, ok := open(t).(tenancy.TenantStore)
	if !ok {
		t.Skip("the store does not implement tenancy.TenantStore")
	}
	ctx := context.Background()

	_, err := s.Workspace(ctx, "ws_missing")
	errorIs(t, err, kilolock.ErrNotFound)
	errorIs(t, s.SetWorkspaceLifecycle(ctx, "ws_missing", tenancy.LifecycleSuspended), kilolock.ErrNotFound)
	errorIs(t, s.CreateEnvironment(ctx, &tenancy.Environment{PublicID: "env_x", Slug: "prod", WorkspaceID: "ws_missing"}), kilolock.ErrNotFound)

	ws := &tenancy.Workspace{ID: kilolock.NewID("ws_"), Name: "acme", Kind: tenancy.WorkspaceOrganization}
	must(t, s.CreateWorkspace(ctx, ws))
	errorIs(t, s.CreateWorkspace(ctx, &tenancy.Workspace{ID: ws.ID, Name: "again", Kind: tenancy.WorkspacePersonal}), kilolock.ErrConflict)
	got, err := s.Workspace(ctx, ws.ID)
	must(t, err)
	if got.Name != "acme" || got.Lifecycle != tenancy.LifecycleActive || !got.Created.Equal(ws.Created) {
		t.Errorf("Workspace = %+v, want %+v", got, ws)
	}
	must(t, s.SetWorkspaceLifecycle(ctx, ws.ID, tenancy.LifecycleSuspended))
	if got, _ := s.Workspace(ctx, ws.ID); got.Lifecycle != tenancy.LifecycleSuspended {
		t.Errorf("lifecycle after suspend = %s", got.Lifecycle)
	}
	if all, err := s.Workspaces(ctx); err != nil || len(all) != 1 {
		t.Errorf("Workspaces = %v, %v; want one", all, err)
	}

	env := &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}
	must(t, s.CreateEnvironment(ctx, env))
	errorIs(t, s.CreateEnvironment(ctx, &tenancy.Environment{PublicID: kilolock.NewID("env_"), Slug: "prod", WorkspaceID: ws.ID}), kilolock.ErrConflict)
	if e, err := s.Environment(ctx, env.PublicID); err != nil || e.Slug != "prod" || e.WorkspaceID != ws.ID {
		t.Errorf("Environment = %+v, %v", e, err)
	}
	_, err = s.Environment(ctx, "env_missing")
	errorIs(t, err, kilolock.ErrNotFound)
	if es, err := s.Environments(ctx, ws.ID); err != nil || len(es) != 1 {
		t.Errorf("Environments = %v, %v", es, err)
	}

	must(t, s.PutMember(ctx, ws.ID, tenancy.Member{UserID: "alice", Role: tenancy.RoleMember}))
	must(t, s.PutMember(ctx, ws.ID, tenancy.Member{UserID: "alice", Role: tenancy.RoleAdmin}))
	if ms, err := s.Members(ctx, ws.ID); err != nil || len(ms) != 1 || ms[0].Role != tenancy.RoleAdmin {
		t.Errorf("Members = %v, %v; want alice as admin", ms, err)
	}
	errorIs(t, s.PutMember(ctx, "ws_missing", tenancy.Member{UserID: "bob", Role: tenancy.RoleMember}), kilolock.ErrNotFound)
	errorIs(t, s.RemoveMember(ctx, ws.ID, "bob"), kilolock.ErrNotFound)

	// Tokens: found by hash only, never by a secret that was not issued.
	auto, secret, err := tenancy.NewToken(tenancy.TokenAutomation)
	must(t, err)
	auto.EnvironmentID, auto.Scope = env.PublicID, tenancy.ScopeRead
	must(t, s.CreateToken(ctx, auto))
	found, err := s.TokenByHash(ctx, tenancy.HashSecret(secret))
	must(t, err)
	if found.ID != auto.ID || found.EnvironmentID != env.PublicID || found.Scope != tenancy.ScopeRead || !found.LastUsed.IsZero() {
		t.Errorf("TokenByHash = %+v, want %+v", found, auto)
	}
	_, err = s.TokenByHash(ctx, tenancy.HashSecret(secret+"x"))
	errorIs(t, err, kilolock.ErrNotFound)
	used := time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC)
	must(t, s.TouchToken(ctx, auto.ID, used))
	if found, _ := s.TokenByHash(ctx, auto.Hash); !found.LastUsed.Equal(used) {
		t.Errorf("LastUsed = %v, want %v", found.LastUsed, used)
	}
	bad, _, _ := tenancy.NewToken(tenancy.TokenAutomation)
	bad.EnvironmentID = "env_missing"
	errorIs(t, s.CreateToken(ctx, bad), kilolock.ErrNotFound)

	pat, patSecret, err := tenancy.NewToken(tenancy.TokenPersonal)
	must(t, err)
	pat.UserID = "alice"
	must(t, s.CreateToken(ctx, pat))
	errorIs(t, s.PutGrant(ctx, &tenancy.Grant{TokenID: auto.ID, EnvironmentID: env.PublicID}), kilolock.ErrInvalid)
	errorIs(t, s.PutGrant(ctx, &tenancy.Grant{TokenID: pat.ID, EnvironmentID: "env_missing"}), kilolock.ErrNotFound)
	must(t, s.PutGrant(ctx, &tenancy.Grant{TokenID: pat.ID, EnvironmentID: env.PublicID}))
	must(t, s.PutGrant(ctx, &tenancy.Grant{TokenID: pat.ID, EnvironmentID: env.PublicID}))
	if gs, err := s.Grants(ctx, pat.ID); err != nil || len(gs) != 1 {
		t.Errorf("Grants = %v, %v; want one", gs, err)
	}
	if ts, err := s.Tokens(ctx, tenancy.TokenPersonal); err != nil || len(ts) != 1 || ts[0].ID != pat.ID {
		t.Errorf("Tokens(personal) = %v, %v", ts, err)
	}
	// Deleting a PAT removes its grants.
	must(t, s.DeleteToken(ctx, pat.ID))
	_, err = s.TokenByHash(ctx, tenancy.HashSecret(patSecret))
	errorIs(t, err, kilolock.ErrNotFound)
	if gs, err := s.Grants(ctx, ""); err != nil || len(gs) != 0 {
		t.Errorf("Grants after deleting the PAT = %v, %v; want none", gs, err)
	}
	errorIs(t, s.DeleteToken(ctx, pat.ID), kilolock.ErrNotFound)
	errorIs(t, s.DeleteGrant(ctx, pat.ID, env.PublicID), kilolock.ErrNotFound)
	must(t, s.TouchToken(ctx, pat.ID, used))

	name, err := tenancy.TenantStateName(ws.ID, env.PublicID, "network")
	must(t, err)
	if l, err := s.StateLifecycle(ctx, name); err != nil || l != tenancy.LifecycleActive {
		t.Errorf("StateLifecycle of a new state = %s, %v", l, err)
	}
	must(t, s.SetStateLifecycle(ctx, name, tenancy.LifecycleArchived))
	if l, _ := s.StateLifecycle(ctx, name); l != tenancy.LifecycleArchived {
		t.Errorf("StateLifecycle after archive = %s", l)
	}

	for i, denied := range []bool{false, true, false} {
		e := &kilolock.AuditEntry{Actor: "operator", Action: "workspace.create", Target: ws.ID, From: "127.0.0.1", Denied: denied, RequestID: "r" + string(rune('0'+i))}
		if denied {
			e.Reason = "grant_missing"
		}
		must(t, s.AppendAudit(ctx, e))
		if e.ID == 0 || e.At.IsZero() {
			t.Errorf("AppendAudit left ID %d, At %v", e.ID, e.At)
		}
	}
	all, err := s.Audit(ctx, kilolock.AuditFilter{})
	must(t, err)
	if len(all) != 3 || all[0].RequestID != "r2" || all[2].RequestID != "r0" {
		t.Errorf("Audit = %+v; want 3 entries newest first", all)
	}
	denied, err := s.Audit(ctx, kilolock.AuditFilter{DeniedOnly: true})
	must(t, err)
	if len(denied) != 1 || denied[0].Reason != "grant_missing" || !denied[0].Denied {
		t.Errorf("Audit(denied) = %+v", denied)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

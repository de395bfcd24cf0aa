package tenancy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/enginetest"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/tenancy"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestControlChanges runs every change of the control plane, checks its
// effect on the store and the one audit entry each writes.
func TestControlChanges(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, ts := enginetest.NewControl(t, open)
			by := kilolock.Caller{Actor: "alice", From: "10.0.0.7:4242", RequestID: "req-1"}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}

			ws, err := c.CreateWorkspace(ctx, by, "acme", "", "alice")
			must(err)
			if !strings.HasPrefix(ws.ID, "ws_") || ws.Kind != tenancy.WorkspaceOrganization || ws.Lifecycle != tenancy.LifecycleActive || ws.Created.IsZero() {
				t.Errorf("workspace = %+v", ws)
			}
			members, err := c.Members(ctx, ws.ID)
			must(err)
			if len(members) != 1 || members[0] != (tenancy.Member{UserID: "alice", Role: tenancy.RoleOwner}) {
				t.Errorf("members after create with an owner = %+v", members)
			}
			env, err := c.CreateEnvironment(ctx, by, ws.ID, "prod")
			must(err)
			if !strings.HasPrefix(env.PublicID, "env_") || env.WorkspaceID != ws.ID || env.Slug != "prod" {
				t.Errorf("environment = %+v", env)
			}
			if _, err := c.CreateEnvironment(ctx, by, ws.ID, "prod"); !errors.Is(err, kilolock.ErrConflict) {
				t.Errorf("a taken slug: %v, want ErrConflict", err)
			}

			auto, secret, err := c.IssueToken(ctx, by, tenancy.TokenRequest{Kind: tenancy.TokenAutomation, Name: "ci", EnvironmentID: env.PublicID})
			must(err)
			if !strings.HasPrefix(secret, "klt_") || auto.Scope != tenancy.ScopeReadWrite || auto.Name != "ci" {
				t.Errorf("automation token %+v, secret %q", auto, secret)
			}
			pat, patSecret, err := c.IssueToken(ctx, by, tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "alice"})
			must(err)
			if !strings.HasPrefix(patSecret, "klp_") || pat.UserID != "alice" {
				t.Errorf("PAT %+v, secret %q", pat, patSecret)
			}
			// Only the hash is kept: the secret finds the token through it.
			for id, s := range map[string]string{auto.ID: secret, pat.ID: patSecret} {
				got, err := ts.TokenByHash(ctx, tenancy.HashSecret(s))
				if err != nil || got.ID != id {
					t.Errorf("TokenByHash(HashSecret(secret of %s)) = %+v, %v", id, got, err)
				}
			}
			tokens, err := c.Tokens(ctx, tenancy.TokenAutomation)
			must(err)
			if len(tokens) != 1 || tokens[0].ID != auto.ID || tokens[0].Hash != tenancy.HashSecret(secret) {
				t.Errorf("automation tokens = %+v", tokens)
			}

			g, err := c.AddGrant(ctx, by, pat.ID, env.PublicID)
			must(err)
			if g.TokenID != pat.ID || g.EnvironmentID != env.PublicID {
				t.Errorf("grant = %+v", g)
			}
			m, err := c.PutMember(ctx, by, ws.ID, "bob", "")
			must(err)
			if m.Role != tenancy.RoleMember {
				t.Errorf("member with no role = %+v", m)
			}
			must(c.RemoveMember(ctx, by, ws.ID, "bob"))

			susp, err := c.SuspendWorkspace(ctx, by, ws.ID)
			must(err)
			res, err := c.ResumeWorkspace(ctx, by, ws.ID)
			must(err)
			if susp.Lifecycle != tenancy.LifecycleSuspended || res.Lifecycle != tenancy.LifecycleActive {
				t.Errorf("suspend → %s, resume → %s", susp.Lifecycle, res.Lifecycle)
			}

			state, _ := tenancy.TenantStateName(ws.ID, env.PublicID, "app")
			must(c.ArchiveState(ctx, by, ws.ID, env.PublicID, "app"))
			if l, _ := ts.StateLifecycle(ctx, state); l != tenancy.LifecycleArchived {
				t.Errorf("after ArchiveState: %s", l)
			}
			must(c.RestoreState(ctx, by, ws.ID, env.PublicID, "app"))
			if l, _ := ts.StateLifecycle(ctx, state); l != tenancy.LifecycleActive {
				t.Errorf("after RestoreState: %s", l)
			}

			must(c.RevokeGrant(ctx, by, pat.ID, env.PublicID))
			must(c.RevokeToken(ctx, by, auto.ID))
			if _, err := ts.TokenByHash(ctx, tenancy.HashSecret(secret)); !errors.Is(err, kilolock.ErrNotFound) {
				t.Errorf("a revoked token's secret: %v, want ErrNotFound", err)
			}
			must(c.RevokeToken(ctx, kilolock.Caller{}, pat.ID))

			entries, got := enginetest.AuditLog(t, c)
			want := []string{
				"workspace.create " + ws.ID,
				"environment.create " + env.PublicID,
				"token.issue " + auto.ID,
				"token.issue " + pat.ID,
				"grant.add " + pat.ID + "->" + env.PublicID,
				"member.add " + ws.ID + "/bob",
				"member.remove " + ws.ID + "/bob",
				"workspace.suspend " + ws.ID,
				"workspace.resume " + ws.ID,
				"state.archive " + state,
				"state.restore " + state,
				"grant.revoke " + pat.ID + "->" + env.PublicID,
				"token.revoke " + auto.ID,
				"token.revoke " + pat.ID,
			}
			if !slices.Equal(got, want) {
				t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for i, e := range entries {
				wantBy := by
				if i == len(entries)-1 {
					wantBy = kilolock.Caller{Actor: "anonymous"}
				}
				if e.Actor != wantBy.Actor || e.From != wantBy.From || e.RequestID != wantBy.RequestID || e.Denied || e.At.IsZero() || e.ID == 0 {
					t.Errorf("audit entry %+v, want by %+v", e, wantBy)
				}
			}
		})
	})
}

// TestControlReadsAreNotAudited: listing changes nothing in the audit log.
func TestControlReadsAreNotAudited(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, _ := enginetest.NewControl(t, open)
			by := kilolock.Caller{Actor: "op"}
			ws, err := c.CreateWorkspace(ctx, by, "acme", tenancy.WorkspacePersonal, "alice")
			if err != nil {
				t.Fatal(err)
			}
			_, before := enginetest.AuditLog(t, c)
			if len(before) != 1 {
				t.Fatalf("audit log after one change: %q", before)
			}
			for name, read := range map[string]func() error{
				"workspaces":   func() error { _, err := c.Workspaces(ctx); return err },
				"environments": func() error { _, err := c.Environments(ctx, ws.ID); return err },
				"members":      func() error { _, err := c.Members(ctx, ws.ID); return err },
				"tokens":       func() error { _, err := c.Tokens(ctx, ""); return err },
				"grants":       func() error { _, err := c.Grants(ctx, ""); return err },
				"audit":        func() error { _, err := c.Audit(ctx, kilolock.AuditFilter{}); return err },
			} {
				if err := read(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			if _, after := enginetest.AuditLog(t, c); !slices.Equal(after, before) {
				t.Errorf("reads were audited: %q", after)
			}
		})
	})
}

// TestControlRefusals: invalid input is an *InvalidError with its code,
// a missing record ErrNotFound; neither changes anything nor is audited.
func TestControlRefusals(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, name string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c, _ := enginetest.NewControl(t, open)
			by := kilolock.Caller{Actor: "op"}
			ws, err := c.CreateWorkspace(ctx, by, "acme", "", "")
			if err != nil {
				t.Fatal(err)
			}
			env, err := c.CreateEnvironment(ctx, by, ws.ID, "prod")
			if err != nil {
				t.Fatal(err)
			}
			other, err := c.CreateWorkspace(ctx, by, "globex", "", "")
			if err != nil {
				t.Fatal(err)
			}
			pat, _, err := c.IssueToken(ctx, by, tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			auto, _, err := c.IssueToken(ctx, by, tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: env.PublicID})
			if err != nil {
				t.Fatal(err)
			}
			personal, err := c.CreateWorkspace(ctx, by, "alice", tenancy.WorkspacePersonal, "alice")
			if err != nil {
				t.Fatal(err)
			}
			owned, err := c.CreateWorkspace(ctx, by, "initech", "", "peter")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.PutMember(ctx, by, owned.ID, "milton", ""); err != nil {
				t.Fatal(err)
			}
			_, before := enginetest.AuditLog(t, c)

			issue := func(req tenancy.TokenRequest) func() error {
				return func() error { _, _, err := c.IssueToken(ctx, by, req); return err }
			}
			tests := []struct {
				name string
				call func() error
				code string // the InvalidError's or ControlError's code
				is   error  // what the error is besides: ErrInvalid, ErrNotFound, ErrConflict
			}{
				{"workspace without a name", func() error { _, err := c.CreateWorkspace(ctx, by, "", "", ""); return err }, "invalid_workspace", kilolock.ErrInvalid},
				{"workspace of an unknown kind", func() error { _, err := c.CreateWorkspace(ctx, by, "x", "galaxy", ""); return err }, "invalid_workspace", kilolock.ErrInvalid},
				{"empty slug", func() error { _, err := c.CreateEnvironment(ctx, by, ws.ID, ""); return err }, "invalid_slug", kilolock.ErrInvalid},
				{"slug with a slash", func() error { _, err := c.CreateEnvironment(ctx, by, ws.ID, "a/b"); return err }, "invalid_slug", kilolock.ErrInvalid},
				{"unknown role", func() error { _, err := c.PutMember(ctx, by, ws.ID, "bob", "king"); return err }, "invalid_role", kilolock.ErrInvalid},
				{"member without a user", func() error { _, err := c.PutMember(ctx, by, ws.ID, "", ""); return err }, "invalid_member", kilolock.ErrInvalid},
				{"token of no kind", issue(tenancy.TokenRequest{EnvironmentID: env.PublicID}), "invalid_token", kilolock.ErrInvalid},
				{"operator token", issue(tenancy.TokenRequest{Kind: tenancy.TokenOperator}), "invalid_token", kilolock.ErrInvalid},
				{"automation without an environment", issue(tenancy.TokenRequest{Kind: tenancy.TokenAutomation}), "invalid_token", kilolock.ErrInvalid},
				{"automation of an unknown scope", issue(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: env.PublicID, Scope: "admin"}), "invalid_token", kilolock.ErrInvalid},
				{"automation with a user", issue(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: env.PublicID, UserID: "bob"}), "invalid_token", kilolock.ErrInvalid},
				{"PAT without a user", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal}), "invalid_token", kilolock.ErrInvalid},
				{"PAT with an environment", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", EnvironmentID: env.PublicID}), "invalid_token", kilolock.ErrInvalid},
				{"token with a negative lifetime", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", ExpiresIn: -time.Hour}), "invalid_token", kilolock.ErrInvalid},
				{"token living past the maximum", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", ExpiresIn: tenancy.MaxTokenLifetime + time.Nanosecond}), "invalid_token", kilolock.ErrInvalid},
				{"automation token living 200 years", issue(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: env.PublicID, ExpiresIn: 200 * 365 * 24 * time.Hour}), "invalid_token", kilolock.ErrInvalid},
				{"PAT with a scope", issue(tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "bob", Scope: tenancy.ScopeRead}), "invalid_token", kilolock.ErrInvalid},
				{"invalid state name", func() error { return c.ArchiveState(ctx, by, ws.ID, env.PublicID, "../x") }, "invalid_state_name", kilolock.ErrInvalid},

				{"personal workspace without its owner", func() error { _, err := c.CreateWorkspace(ctx, by, "x", tenancy.WorkspacePersonal, ""); return err }, "invalid_workspace", kilolock.ErrInvalid},
				{"slug that looks like a public id", func() error { _, err := c.CreateEnvironment(ctx, by, ws.ID, "env_0123"); return err }, "invalid_slug", kilolock.ErrInvalid},
				{"grant to an automation token", func() error { _, err := c.AddGrant(ctx, by, auto.ID, env.PublicID); return err }, "grant_needs_pat", kilolock.ErrInvalid},
				{"taken slug", func() error { _, err := c.CreateEnvironment(ctx, by, ws.ID, "prod"); return err }, "slug_taken", kilolock.ErrConflict},
				{"second member of a personal workspace", func() error { _, err := c.PutMember(ctx, by, personal.ID, "bob", ""); return err }, "personal_workspace", kilolock.ErrConflict},
				{"demote a personal workspace's owner", func() error { _, err := c.PutMember(ctx, by, personal.ID, "alice", tenancy.RoleAdmin); return err }, "personal_workspace", kilolock.ErrConflict},
				{"remove a personal workspace's owner", func() error { return c.RemoveMember(ctx, by, personal.ID, "alice") }, "personal_workspace", kilolock.ErrConflict},
				{"remove the last owner", func() error { return c.RemoveMember(ctx, by, owned.ID, "peter") }, "last_owner", kilolock.ErrConflict},
				{"demote the last owner", func() error { _, err := c.PutMember(ctx, by, owned.ID, "peter", tenancy.RoleMember); return err }, "last_owner", kilolock.ErrConflict},
				{"suspend a missing workspace", func() error { _, err := c.SuspendWorkspace(ctx, by, "ws_missing"); return err }, "workspace_not_found", kilolock.ErrNotFound},
				{"resume a missing workspace", func() error { _, err := c.ResumeWorkspace(ctx, by, "ws_missing"); return err }, "workspace_not_found", kilolock.ErrNotFound},
				{"environment in a missing workspace", func() error { _, err := c.CreateEnvironment(ctx, by, "ws_missing", "prod"); return err }, "workspace_not_found", kilolock.ErrNotFound},
				{"environments of a missing workspace", func() error { _, err := c.Environments(ctx, "ws_missing"); return err }, "workspace_not_found", kilolock.ErrNotFound},
				{"member of a missing workspace", func() error { _, err := c.PutMember(ctx, by, "ws_missing", "bob", ""); return err }, "workspace_not_found", kilolock.ErrNotFound},
				{"remove a non-member", func() error { return c.RemoveMember(ctx, by, ws.ID, "nobody") }, "member_not_found", kilolock.ErrNotFound},
				{"token for a missing environment", issue(tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: "env_missing"}), "environment_not_found", kilolock.ErrNotFound},
				{"revoke a missing token", func() error { return c.RevokeToken(ctx, by, "tok_missing") }, "token_not_found", kilolock.ErrNotFound},
				{"grant a missing token", func() error { _, err := c.AddGrant(ctx, by, "tok_missing", env.PublicID); return err }, "token_not_found", kilolock.ErrNotFound},
				{"grant a missing environment", func() error { _, err := c.AddGrant(ctx, by, pat.ID, "env_missing"); return err }, "environment_not_found", kilolock.ErrNotFound},
				{"revoke a missing grant", func() error { return c.RevokeGrant(ctx, by, pat.ID, env.PublicID) }, "grant_not_found", kilolock.ErrNotFound},
				{"archive in a missing environment", func() error { return c.ArchiveState(ctx, by, ws.ID, "env_missing", "app") }, "environment_not_found", kilolock.ErrNotFound},
				{"archive in another workspace's environment", func() error { return c.ArchiveState(ctx, by, other.ID, env.PublicID, "app") }, "environment_not_found", kilolock.ErrNotFound},
				{"restore in another workspace's environment", func() error { return c.RestoreState(ctx, by, other.ID, env.PublicID, "app") }, "environment_not_found", kilolock.ErrNotFound},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					err := tt.call()
					var (
						ie                  *kilolock.InvalidError
						ce                  *kilolock.ControlError
						code, message, hint string
					)
					switch {
					case errors.As(err, &ie):
						code, message, hint = ie.Code, ie.Message, ie.Hint
					case errors.As(err, &ce):
						code, message, hint = ce.Code, ce.Message, ce.Hint
					}
					if !errors.Is(err, tt.is) || code != tt.code || message == "" || hint == "" || strings.Contains(message, "sqlite") || strings.Contains(message, "SQLSTATE") {
						t.Fatalf("err = %#v, want %v with code %s, a message in our words and a hint", err, tt.is, tt.code)
					}
				})
			}
			if _, after := enginetest.AuditLog(t, c); !slices.Equal(after, before) {
				t.Errorf("refusals were audited: %q", after[len(before):])
			}
			if ts, err := c.Tokens(ctx, ""); err != nil || len(ts) != 2 {
				t.Errorf("refused requests issued tokens: %+v, %v", ts, err)
			}
		})
	})
}

// TestControlTokenForMissingEnvironment names the environment, as the
// control API always has.
func TestControlTokenForMissingEnvironment(t *testing.T) {
	c, _ := enginetest.NewControl(t, func(tb testing.TB) kilolock.Store { st, _ := enginetest.OpenSQLite(tb); return st })
	_, _, err := c.IssueToken(context.Background(), kilolock.Caller{}, tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: "env_nope"})
	if want := `there is no environment "env_nope"`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "90d": 90 * 24 * time.Hour, "1d": 24 * time.Hour, "720h": 720 * time.Hour, "30m": 30 * time.Minute, "2160h0m0s": 2160 * time.Hour} {
		if got, err := tenancy.ParseExpiry(in); err != nil || got != want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "0d", "-1d", "0s", "-5m", "1.5d", "d", "01d", "90 d"} {
		if _, err := tenancy.ParseExpiry(in); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("ParseExpiry(%q) = %v, want ErrInvalid", in, err)
		}
	}
	// Ten years is the longest lifetime; past it, and where the number of
	// days overflows a Duration (213503983d wrapped to 16 hours,
	// 99999999999d to 2224 years), the error names the maximum.
	if got, err := tenancy.ParseExpiry("3650d"); err != nil || got != tenancy.MaxTokenLifetime {
		t.Errorf("ParseExpiry(3650d) = %v, %v; want the maximum %v", got, err, tenancy.MaxTokenLifetime)
	}
	for _, in := range []string{"3651d", "87601h", "213503983d", "99999999999d", "106751d", "9223372036854775807d", "99999999999999999999d", "2562047h"} {
		_, err := tenancy.ParseExpiry(in)
		if !errors.Is(err, kilolock.ErrInvalid) || !strings.Contains(err.Error(), "3650 days") {
			t.Errorf("ParseExpiry(%q) = %v, want ErrInvalid naming the maximum of 3650 days", in, err)
		}
	}
}

// TestControlTokenExpiry: a lifetime becomes an expiry that far from now,
// and the token is expired from then on.
func TestControlTokenExpiry(t *testing.T) {
	c, _ := enginetest.NewControl(t, func(tb testing.TB) kilolock.Store { st, _ := enginetest.OpenSQLite(tb); return st })
	before := time.Now()
	tok, _, err := c.IssueToken(context.Background(), kilolock.Caller{}, tenancy.TokenRequest{Kind: tenancy.TokenPersonal, UserID: "alice", ExpiresIn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Expires.Before(before.Add(time.Hour).Truncate(time.Microsecond)) || tok.Expires.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Expires = %v, want an hour from %v", tok.Expires, before)
	}
	if tok.Expired(tok.Expires.Add(-time.Nanosecond)) || !tok.Expired(tok.Expires) || !tok.Expired(tok.Expires.Add(time.Second)) {
		t.Error("Expired: want false before the expiry, true at and after it")
	}
	if never := (&tenancy.Token{}); never.Expired(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("a token without an expiry expired")
	}
}

// TestControlOutputsToken: an outputs-scoped token is kept with its scope,
// and what it reaches is the outputs-only address, read-only.
func TestControlOutputsToken(t *testing.T) {
	ctx := context.Background()
	c, ts := enginetest.NewControl(t, func(tb testing.TB) kilolock.Store { st, _ := enginetest.OpenSQLite(tb); return st })
	ws, err := c.CreateWorkspace(ctx, kilolock.Caller{}, "acme", tenancy.WorkspaceOrganization, "alice")
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.CreateEnvironment(ctx, kilolock.Caller{}, ws.ID, "prod")
	if err != nil {
		t.Fatal(err)
	}
	base := "/v1/states/" + ws.ID + "/" + env.PublicID + "/{state_name}"
	for _, tt := range []struct {
		scope       tenancy.Scope
		path        string
		writable    bool
		outputsOnly bool
	}{
		{tenancy.ScopeOutputs, base + "/outputs", false, true},
		{tenancy.ScopeRead, base, false, false},
		{tenancy.ScopeReadWrite, base, true, false},
	} {
		t.Run(string(tt.scope), func(t *testing.T) {
			tok, secret, err := c.IssueToken(ctx, kilolock.Caller{}, tenancy.TokenRequest{Kind: tenancy.TokenAutomation, EnvironmentID: env.PublicID, Scope: tt.scope})
			if err != nil {
				t.Fatal(err)
			}
			if stored, err := ts.TokenByHash(ctx, tenancy.HashSecret(secret)); err != nil || stored.Scope != tt.scope {
				t.Fatalf("stored token %+v, %v; want scope %s", stored, err, tt.scope)
			}
			r, err := c.Reach(ctx, tenancy.HashSecret(secret), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Environments) != 1 || r.Token.ID != tok.ID {
				t.Fatalf("reach %+v", r)
			}
			if e := r.Environments[0]; e.Path != tt.path || e.Writable != tt.writable || e.OutputsOnly != tt.outputsOnly {
				t.Errorf("reach %+v; want path %s, writable %v, outputs only %v", e, tt.path, tt.writable, tt.outputsOnly)
			}
		})
	}
}

package main

import (
	"context"
	"slices"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// tenant is what provisioning gives a team: where its states live and a
// token to reach them.
type tenant struct {
	Workspace tenancy.Workspace
	Env       tenancy.Environment
	TokenID   string
	Secret    string // klt_…: shown once, the store keeps only its hash
}

// provision finds or creates the workspace named team (owned by owner) and
// its prod environment, and issues a fresh read-write token for prod that
// expires in 24 hours. Each change is audited as by.
func provision(ctx context.Context, ctl *tenancy.Control, by kilolock.Caller, team, owner string) (*tenant, error) {
	t := &tenant{}
	wss, err := ctl.Workspaces(ctx)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(wss, func(w tenancy.Workspace) bool { return w.Name == team }); i >= 0 {
		t.Workspace = wss[i]
	} else if ws, err := ctl.CreateWorkspace(ctx, by, team, tenancy.WorkspaceOrganization, owner); err != nil {
		return nil, err
	} else {
		t.Workspace = *ws
	}
	envs, err := ctl.Environments(ctx, t.Workspace.ID)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(envs, func(e tenancy.Environment) bool { return e.Slug == "prod" }); i >= 0 {
		t.Env = envs[i]
	} else if env, err := ctl.CreateEnvironment(ctx, by, t.Workspace.ID, "prod"); err != nil {
		return nil, err
	} else {
		t.Env = *env
	}
	tok, secret, err := ctl.IssueToken(ctx, by, tenancy.TokenRequest{
		Kind: tenancy.TokenAutomation, Name: team + "-prod", EnvironmentID: t.Env.PublicID,
		Scope: tenancy.ScopeReadWrite, ExpiresIn: 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	t.TokenID, t.Secret = tok.ID, secret
	return t, nil
}

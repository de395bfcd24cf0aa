package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// IssuedToken is a token with its secret: the only time the secret is shown.
type IssuedToken struct {
	*tenancy.Token
	Secret string `json:"secret"`
}

// WorkspaceRequest is the body of POST /v1/api/workspaces.
type WorkspaceRequest struct {
	Name  string                `json:"name"`
	Kind  tenancy.WorkspaceKind `json:"kind"`
	Owner string                `json:"owner"`
}

// EnvironmentRequest is the body of POST /v1/api/workspaces/WS/environments.
type EnvironmentRequest struct {
	Slug string `json:"slug"`
}

// MemberRequest is the body of PUT /v1/api/workspaces/WS/members/USER.
type MemberRequest struct {
	Role tenancy.Role `json:"role"`
}

// TokenRequest is the body of POST /v1/api/tokens: an automation token
// (EnvironmentID, Scope) or a personal access token (UserID), expiring
// after ExpiresIn ("90d", "720h"; empty: never).
type TokenRequest struct {
	Kind          tenancy.TokenKind `json:"kind"`
	Name          string            `json:"name"`
	EnvironmentID string            `json:"environment_id"`
	Scope         tenancy.Scope     `json:"scope"`
	UserID        string            `json:"user_id"`
	ExpiresIn     string            `json:"expires_in"`
}

// Removed is the answer of a removal: what was removed.
type Removed struct {
	Removed string `json:"removed"`
}

// Revoked is the answer of a revocation: the token, or TOKEN->ENV for a
// grant.
type Revoked struct {
	Revoked string `json:"revoked"`
}

// LifecycleAnswer is the answer of a state's archive or restore.
type LifecycleAnswer struct {
	State     string            `json:"state"`
	Lifecycle tenancy.Lifecycle `json:"lifecycle"`
}

// The control API: workspaces, environments, members, tokens, grants and
// the audit log, for the operator token on a server with --auth=token.

func wsPath(ws string) string { return "/v1/api/workspaces/" + seg(ws) }

// CreateWorkspace creates a workspace (POST /v1/api/workspaces).
func (c *Client) CreateWorkspace(ctx context.Context, req WorkspaceRequest) (*tenancy.Workspace, error) {
	var out tenancy.Workspace
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/workspaces"}.jsonBody(req), &out)
}

// Workspaces lists the workspaces (GET /v1/api/workspaces).
func (c *Client) Workspaces(ctx context.Context) ([]tenancy.Workspace, error) {
	var out []tenancy.Workspace
	return out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/workspaces"}, &out)
}

// SuspendWorkspace suspends a workspace: its tokens are refused until it
// is resumed (POST /v1/api/workspaces/WS/suspend).
func (c *Client) SuspendWorkspace(ctx context.Context, ws string) (*tenancy.Workspace, error) {
	var out tenancy.Workspace
	return &out, c.do(ctx, request{method: http.MethodPost, path: wsPath(ws) + "/suspend"}, &out)
}

// ResumeWorkspace resumes a suspended workspace (POST
// /v1/api/workspaces/WS/resume).
func (c *Client) ResumeWorkspace(ctx context.Context, ws string) (*tenancy.Workspace, error) {
	var out tenancy.Workspace
	return &out, c.do(ctx, request{method: http.MethodPost, path: wsPath(ws) + "/resume"}, &out)
}

// CreateEnvironment creates an environment in a workspace (POST
// /v1/api/workspaces/WS/environments).
func (c *Client) CreateEnvironment(ctx context.Context, ws, slug string) (*tenancy.Environment, error) {
	var out tenancy.Environment
	return &out, c.do(ctx, request{method: http.MethodPost, path: wsPath(ws) + "/environments"}.jsonBody(EnvironmentRequest{Slug: slug}), &out)
}

// Environments lists a workspace's environments (GET
// /v1/api/workspaces/WS/environments).
func (c *Client) Environments(ctx context.Context, ws string) ([]tenancy.Environment, error) {
	var out []tenancy.Environment
	return out, c.do(ctx, request{method: http.MethodGet, path: wsPath(ws) + "/environments"}, &out)
}

// ConfigureEnvironment changes an environment's settings (PATCH
// /v1/api/workspaces/WS/environments/ENV).
func (c *Client) ConfigureEnvironment(ctx context.Context, ws, env string, cfg tenancy.EnvironmentConfig) (*tenancy.Environment, error) {
	var out tenancy.Environment
	return &out, c.do(ctx, request{method: http.MethodPatch, path: wsPath(ws) + "/environments/" + seg(env)}.jsonBody(cfg), &out)
}

// PutMember adds a member to a workspace, or changes their role (PUT
// /v1/api/workspaces/WS/members/USER).
func (c *Client) PutMember(ctx context.Context, ws, user string, role tenancy.Role) (*tenancy.Member, error) {
	var out tenancy.Member
	return &out, c.do(ctx, request{method: http.MethodPut, path: wsPath(ws) + "/members/" + seg(user)}.jsonBody(MemberRequest{Role: role}), &out)
}

// RemoveMember removes a member from a workspace (DELETE
// /v1/api/workspaces/WS/members/USER).
func (c *Client) RemoveMember(ctx context.Context, ws, user string) (*Removed, error) {
	var out Removed
	return &out, c.do(ctx, request{method: http.MethodDelete, path: wsPath(ws) + "/members/" + seg(user)}, &out)
}

// Members lists a workspace's members (GET /v1/api/workspaces/WS/members).
func (c *Client) Members(ctx context.Context, ws string) ([]tenancy.Member, error) {
	var out []tenancy.Member
	return out, c.do(ctx, request{method: http.MethodGet, path: wsPath(ws) + "/members"}, &out)
}

// ArchiveState archives a tenant's state: read-only, out of its
// environment's quota (POST
// /v1/api/workspaces/WS/environments/ENV/states/STATE/archive).
func (c *Client) ArchiveState(ctx context.Context, ws, env, state string) (*LifecycleAnswer, error) {
	return c.lifecycle(ctx, ws, env, state, "archive")
}

// RestoreState restores an archived state (POST
// /v1/api/workspaces/WS/environments/ENV/states/STATE/restore).
func (c *Client) RestoreState(ctx context.Context, ws, env, state string) (*LifecycleAnswer, error) {
	return c.lifecycle(ctx, ws, env, state, "restore")
}

func (c *Client) lifecycle(ctx context.Context, ws, env, state, verb string) (*LifecycleAnswer, error) {
	var out LifecycleAnswer
	return &out, c.do(ctx, request{method: http.MethodPost, path: wsPath(ws) + "/environments/" + seg(env) + "/states/" + seg(state) + "/" + verb, state: state}, &out)
}

// IssueToken issues an automation token or a personal access token (POST
// /v1/api/tokens); the answer's Secret is shown this once.
func (c *Client) IssueToken(ctx context.Context, req TokenRequest) (*IssuedToken, error) {
	var out IssuedToken
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/tokens"}.jsonBody(req), &out)
}

// Tokens lists the tokens, of one kind when kind is set (GET
// /v1/api/tokens).
func (c *Client) Tokens(ctx context.Context, kind tenancy.TokenKind) ([]tenancy.Token, error) {
	q := url.Values{}
	if kind != "" {
		q.Set("kind", string(kind))
	}
	var out []tenancy.Token
	return out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/tokens", query: q}, &out)
}

func tokenPath(id string) string { return "/v1/api/tokens/" + seg(id) }

// RevokeToken revokes a token (DELETE /v1/api/tokens/ID).
func (c *Client) RevokeToken(ctx context.Context, id string) (*Revoked, error) {
	var out Revoked
	return &out, c.do(ctx, request{method: http.MethodDelete, path: tokenPath(id)}, &out)
}

// AddGrant lets a personal access token reach an environment (PUT
// /v1/api/tokens/ID/grants/ENV).
func (c *Client) AddGrant(ctx context.Context, id, env string) (*tenancy.Grant, error) {
	var out tenancy.Grant
	return &out, c.do(ctx, request{method: http.MethodPut, path: tokenPath(id) + "/grants/" + seg(env)}, &out)
}

// RevokeGrant takes an environment from a token (DELETE
// /v1/api/tokens/ID/grants/ENV).
func (c *Client) RevokeGrant(ctx context.Context, id, env string) (*Revoked, error) {
	var out Revoked
	return &out, c.do(ctx, request{method: http.MethodDelete, path: tokenPath(id) + "/grants/" + seg(env)}, &out)
}

// Grants lists a token's grants (GET /v1/api/tokens/ID/grants).
func (c *Client) Grants(ctx context.Context, id string) ([]tenancy.Grant, error) {
	var out []tenancy.Grant
	return out, c.do(ctx, request{method: http.MethodGet, path: tokenPath(id) + "/grants"}, &out)
}

// AuditOptions filter the audit log: denied requests only, at most Limit
// entries (0: the server's default).
type AuditOptions struct {
	DeniedOnly bool
	Limit      int
}

// Audit reads the audit log, newest first (GET /v1/api/audit).
func (c *Client) Audit(ctx context.Context, o AuditOptions) ([]kilolock.AuditEntry, error) {
	q := limitQuery(o.Limit)
	if o.DeniedOnly {
		q.Set("denied", "true")
	}
	var out []kilolock.AuditEntry
	return out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/audit", query: q}, &out)
}

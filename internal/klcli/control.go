package klcli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kilolock/kilolock"
)

// Control runs kl's tenancy commands (workspaces, environments, members,
// tokens, PATs, grants, state lifecycles, audit) against a server's
// operator control API under /v1/api/. It needs a server: a database
// given with --database has no control API.
type Control struct {
	HTTP *HTTPBackend
	Out  io.Writer
	JSON bool
}

// errNeedsServer is the answer of a control command given --database.
var errNeedsServer = &UsageError{
	Message: "this command uses the server's control API: it needs a server (--server), not a database (--database)",
	Hint:    "run it with --server URL --token klo_… (the operator token), and without --database (KL_DATABASE_URL)",
}

// control opens the server g names and runs f on a Control over it.
func (g *Globals) control(json bool, f func(*Control) error) error {
	if g.Database != "" {
		return errNeedsServer
	}
	server := g.Server
	if server == "" {
		server = DefaultServer
	}
	b, err := NewHTTPBackend(server, HTTPOptions{Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
	if err != nil {
		return err
	}
	defer b.Close()
	return f(&Control{HTTP: b, Out: g.out(), JSON: json})
}

func (c *Control) cli() *CLI { return &CLI{Out: c.Out, JSON: c.JSON} }

func wsPath(ws string) string { return "/v1/api/workspaces/" + url.PathEscape(ws) }

func tokenPath(id string) string { return "/v1/api/tokens/" + url.PathEscape(id) }

// CreateWorkspace creates a workspace of kind (organization when empty),
// with owner as its owner when given.
func (c *Control) CreateWorkspace(ctx context.Context, name string, kind kilolock.WorkspaceKind, owner string) error {
	var ws kilolock.Workspace
	body := map[string]string{"name": name, "kind": string(kind), "owner": owner}
	if err := c.HTTP.do(ctx, http.MethodPost, "/v1/api/workspaces", nil, body, &ws); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(ws)
	}
	fmt.Fprintf(c.Out, "Created workspace %s (%s, %s).\n", ws.ID, cell(ws.Name), ws.Kind)
	return nil
}

// Workspaces lists the workspaces.
func (c *Control) Workspaces(ctx context.Context) error {
	var out []kilolock.Workspace
	if err := c.HTTP.do(ctx, http.MethodGet, "/v1/api/workspaces", nil, nil, &out); err != nil {
		return err
	}
	if out == nil {
		out = []kilolock.Workspace{}
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	tw := c.cli().table()
	row(tw, "ID", "NAME", "KIND", "LIFECYCLE", "CREATED")
	for _, ws := range out {
		row(tw, ws.ID, cell(ws.Name), string(ws.Kind), orDash(string(ws.Lifecycle)), formatTime(ws.Created))
	}
	return tw.Flush()
}

// SetWorkspaceLifecycle suspends (suspend true) or resumes a workspace.
func (c *Control) SetWorkspaceLifecycle(ctx context.Context, id string, suspend bool) error {
	action := "resume"
	if suspend {
		action = "suspend"
	}
	var ws kilolock.Workspace
	if err := c.HTTP.do(ctx, http.MethodPost, wsPath(id)+"/"+action, nil, nil, &ws); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(ws)
	}
	fmt.Fprintf(c.Out, "Workspace %s is %s.\n", ws.ID, orDash(string(ws.Lifecycle)))
	return nil
}

// CreateEnvironment creates an environment in workspace ws.
func (c *Control) CreateEnvironment(ctx context.Context, ws, slug string) error {
	var e kilolock.Environment
	if err := c.HTTP.do(ctx, http.MethodPost, wsPath(ws)+"/environments", nil, map[string]string{"slug": slug}, &e); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(e)
	}
	fmt.Fprintf(c.Out, "Created environment %s (%s) in workspace %s.\n", e.PublicID, cell(e.Slug), e.WorkspaceID)
	return nil
}

// Environments lists the environments of workspace ws.
func (c *Control) Environments(ctx context.Context, ws string) error {
	var out []kilolock.Environment
	if err := c.HTTP.do(ctx, http.MethodGet, wsPath(ws)+"/environments", nil, nil, &out); err != nil {
		return err
	}
	if out == nil {
		out = []kilolock.Environment{}
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	tw := c.cli().table()
	row(tw, "ID", "SLUG", "WORKSPACE", "CREATED")
	for _, e := range out {
		row(tw, e.PublicID, cell(e.Slug), e.WorkspaceID, formatTime(e.Created))
	}
	return tw.Flush()
}

// IssuedToken is a token as it is issued: with its secret, shown once.
type IssuedToken struct {
	kilolock.Token
	Secret string `json:"secret"`
}

// IssueToken issues an automation token (env, scope) or a personal access
// token (user) and shows its secret, this once.
func (c *Control) IssueToken(ctx context.Context, kind kilolock.TokenKind, name, env string, scope kilolock.Scope, user string) error {
	body := map[string]string{"kind": string(kind)}
	for k, v := range map[string]string{"name": name, "environment_id": env, "scope": string(scope), "user_id": user} {
		if v != "" {
			body[k] = v
		}
	}
	var tok IssuedToken
	if err := c.HTTP.do(ctx, http.MethodPost, "/v1/api/tokens", nil, body, &tok); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(tok)
	}
	what := "token"
	if tok.Kind == kilolock.TokenPersonal {
		what = "personal access token"
	}
	fmt.Fprintf(c.Out, "Issued %s %s", what, tok.ID)
	switch {
	case tok.EnvironmentID != "":
		fmt.Fprintf(c.Out, " (%s on %s)", tok.Scope, tok.EnvironmentID)
	case tok.UserID != "":
		fmt.Fprintf(c.Out, " (for %s)", cell(tok.UserID))
	}
	fmt.Fprintln(c.Out, ".")
	fmt.Fprintf(c.Out, "Secret: %s\n", tok.Secret)
	fmt.Fprintln(c.Out, "Store this secret now: it will not be shown again.")
	return nil
}

// Tokens lists the tokens of kind ("" for every kind), without secrets.
func (c *Control) Tokens(ctx context.Context, kind kilolock.TokenKind) error {
	q := url.Values{}
	if kind != "" {
		q.Set("kind", string(kind))
	}
	var out []kilolock.Token
	if err := c.HTTP.do(ctx, http.MethodGet, "/v1/api/tokens", q, nil, &out); err != nil {
		return err
	}
	if out == nil {
		out = []kilolock.Token{}
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	tw := c.cli().table()
	row(tw, "ID", "KIND", "NAME", "ENVIRONMENT", "SCOPE", "USER", "CREATED", "LAST USED")
	for _, t := range out {
		row(tw, t.ID, string(t.Kind), orDash(t.Name), orDash(t.EnvironmentID), orDash(string(t.Scope)), orDash(t.UserID), formatTime(t.Created), formatTime(t.LastUsed))
	}
	return tw.Flush()
}

// DeleteToken revokes a token (automation or personal).
func (c *Control) DeleteToken(ctx context.Context, id string) error {
	var out map[string]string
	if err := c.HTTP.do(ctx, http.MethodDelete, tokenPath(id), nil, nil, &out); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	fmt.Fprintf(c.Out, "Revoked token %s.\n", cell(id))
	return nil
}

// AddGrant grants a personal access token access to an environment.
func (c *Control) AddGrant(ctx context.Context, token, env string) error {
	var g kilolock.Grant
	if err := c.HTTP.do(ctx, http.MethodPut, tokenPath(token)+"/grants/"+url.PathEscape(env), nil, nil, &g); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(g)
	}
	fmt.Fprintf(c.Out, "Granted %s access to %s.\n", g.TokenID, g.EnvironmentID)
	return nil
}

// RevokeGrant takes a grant away.
func (c *Control) RevokeGrant(ctx context.Context, token, env string) error {
	var out map[string]string
	if err := c.HTTP.do(ctx, http.MethodDelete, tokenPath(token)+"/grants/"+url.PathEscape(env), nil, nil, &out); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	fmt.Fprintf(c.Out, "Revoked the grant of %s on %s.\n", cell(token), cell(env))
	return nil
}

// Grants lists a token's grants.
func (c *Control) Grants(ctx context.Context, token string) error {
	var out []kilolock.Grant
	if err := c.HTTP.do(ctx, http.MethodGet, tokenPath(token)+"/grants", nil, nil, &out); err != nil {
		return err
	}
	if out == nil {
		out = []kilolock.Grant{}
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	tw := c.cli().table()
	row(tw, "TOKEN", "ENVIRONMENT", "CREATED")
	for _, g := range out {
		row(tw, g.TokenID, g.EnvironmentID, formatTime(g.Created))
	}
	return tw.Flush()
}

// PutMember adds a user to a workspace, or changes their role.
func (c *Control) PutMember(ctx context.Context, ws, user string, role kilolock.Role) error {
	var body any
	if role != "" {
		body = map[string]string{"role": string(role)}
	}
	var m kilolock.Member
	if err := c.HTTP.do(ctx, http.MethodPut, wsPath(ws)+"/members/"+url.PathEscape(user), nil, body, &m); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(m)
	}
	fmt.Fprintf(c.Out, "%s is a%s %s of workspace %s.\n", cell(m.UserID), article(string(m.Role)), m.Role, cell(ws))
	return nil
}

func article(word string) string {
	if word != "" && (word[0] == 'a' || word[0] == 'o') {
		return "n"
	}
	return ""
}

// RemoveMember removes a user from a workspace.
func (c *Control) RemoveMember(ctx context.Context, ws, user string) error {
	var out map[string]string
	if err := c.HTTP.do(ctx, http.MethodDelete, wsPath(ws)+"/members/"+url.PathEscape(user), nil, nil, &out); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	fmt.Fprintf(c.Out, "Removed %s from workspace %s.\n", cell(user), cell(ws))
	return nil
}

// Members lists a workspace's members.
func (c *Control) Members(ctx context.Context, ws string) error {
	var out []kilolock.Member
	if err := c.HTTP.do(ctx, http.MethodGet, wsPath(ws)+"/members", nil, nil, &out); err != nil {
		return err
	}
	if out == nil {
		out = []kilolock.Member{}
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	tw := c.cli().table()
	row(tw, "USER", "ROLE")
	for _, m := range out {
		row(tw, cell(m.UserID), string(m.Role))
	}
	return tw.Flush()
}

// SetStateLifecycle archives (archive true) or restores a tenant's state.
func (c *Control) SetStateLifecycle(ctx context.Context, ws, env, state string, archive bool) error {
	action := "restore"
	if archive {
		action = "archive"
	}
	path := wsPath(ws) + "/environments/" + url.PathEscape(env) + "/states/" + url.PathEscape(state) + "/" + action
	var out map[string]string
	if err := c.HTTP.do(ctx, http.MethodPost, path, nil, nil, &out); err != nil {
		return err
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	fmt.Fprintf(c.Out, "State %s is %s.\n", cell(out["state"]), orDash(out["lifecycle"]))
	return nil
}

// Audit lists the audit log, newest first; denied only lists refusals.
func (c *Control) Audit(ctx context.Context, denied bool, limit int) error {
	q := url.Values{}
	if denied {
		q.Set("denied", "true")
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out []kilolock.AuditEntry
	if err := c.HTTP.do(ctx, http.MethodGet, "/v1/api/audit", q, nil, &out); err != nil {
		return err
	}
	if out == nil {
		out = []kilolock.AuditEntry{}
	}
	if c.JSON {
		return c.cli().writeJSON(out)
	}
	tw := c.cli().table()
	row(tw, "AT", "ACTOR", "ACTION", "TARGET", "RESULT", "FROM")
	for _, e := range out {
		result := "ok"
		if e.Denied {
			result = "denied"
			if e.Reason != "" {
				result += ": " + e.Reason
			}
		}
		row(tw, formatTime(e.At), orDash(e.Actor), orDash(e.Action), orDash(e.Target), cell(result), orDash(e.From))
	}
	return tw.Flush()
}

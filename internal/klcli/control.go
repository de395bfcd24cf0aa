package klcli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// Control runs kl's tenancy commands (workspaces, environments, members,
// tokens, PATs, grants, state lifecycles, audit) on a ControlAPI and prints
// their results, the same whichever way API reaches tenancy.Control.
type Control struct {
	API  ControlAPI
	Out  io.Writer
	JSON bool
}

// ControlAPI is what the tenancy commands need: the operations of
// tenancy.Control, reached through the operator control API under /v1/api/
// (a server's, with the operator token, or a database's in-process, as its
// operator). It answers with the root package's types and errors
// (ErrNotFound, ErrConflict, ErrInvalid).
type ControlAPI interface {
	CreateWorkspace(ctx context.Context, name string, kind tenancy.WorkspaceKind, owner string) (*tenancy.Workspace, error)
	Workspaces(ctx context.Context) ([]tenancy.Workspace, error)
	// SetWorkspaceLifecycle suspends (suspend true) or resumes a workspace
	// and returns it as it now is.
	SetWorkspaceLifecycle(ctx context.Context, id string, suspend bool) (*tenancy.Workspace, error)
	CreateEnvironment(ctx context.Context, ws, slug string) (*tenancy.Environment, error)
	Environments(ctx context.Context, ws string) ([]tenancy.Environment, error)
	ConfigureEnvironment(ctx context.Context, ws, env string, cfg tenancy.EnvironmentConfig) (*tenancy.Environment, error)
	IssueToken(ctx context.Context, req tenancy.TokenRequest) (*IssuedToken, error)
	Tokens(ctx context.Context, kind tenancy.TokenKind) ([]tenancy.Token, error)
	RevokeToken(ctx context.Context, id string) error
	AddGrant(ctx context.Context, token, env string) (*tenancy.Grant, error)
	RevokeGrant(ctx context.Context, token, env string) error
	Grants(ctx context.Context, token string) ([]tenancy.Grant, error)
	PutMember(ctx context.Context, ws, user string, role tenancy.Role) (*tenancy.Member, error)
	RemoveMember(ctx context.Context, ws, user string) error
	Members(ctx context.Context, ws string) ([]tenancy.Member, error)
	// SetStateLifecycle archives (archive true) or restores a tenant's
	// state.
	SetStateLifecycle(ctx context.Context, ws, env, state string, archive bool) error
	Audit(ctx context.Context, f kilolock.AuditFilter) ([]kilolock.AuditEntry, error)
	// Reach is what the token with secret reaches (tenancy.Reach).
	Reach(ctx context.Context, secret string) (*tenancy.Reach, error)
	// SetQuota sets (ch.Limit) or clears a limit.
	SetQuota(ctx context.Context, ch tenancy.QuotaChange) error
	// Quotas lists the limits set.
	Quotas(ctx context.Context) ([]kilolock.QuotaSetting, error)
}

// IssuedToken is a token as it is issued: with its secret, shown once.
type IssuedToken struct {
	tenancy.Token
	Secret string `json:"secret"`
}

// control opens the server or database g names and runs f on a Control
// over it.
func (g *Globals) control(ctx context.Context, json bool, f func(*Control) error) error {
	b, err := Open(ctx, Target{Server: g.Server, Database: g.Database, KeyFile: g.KeyFile, Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
	if err != nil {
		return err
	}
	defer b.Close()
	return f(&Control{API: serverControl{b}, Out: g.out(), JSON: json})
}

func (c *Control) cli() *CLI { return &CLI{Out: c.Out, JSON: c.JSON} }

// CreateWorkspace creates a workspace of kind (organization when empty),
// with owner as its owner when given.
func (c *Control) CreateWorkspace(ctx context.Context, name string, kind tenancy.WorkspaceKind, owner string) error {
	ws, err := c.API.CreateWorkspace(ctx, name, kind, owner)
	if err != nil {
		return err
	}
	return c.cli().say(ws, "Created workspace %s (%s, %s).\n", ws.ID, cell(ws.Name), ws.Kind)
}

// Workspaces lists the workspaces.
func (c *Control) Workspaces(ctx context.Context) error {
	out, err := c.API.Workspaces(ctx)
	if err != nil {
		return err
	}
	return list(c.cli(), out, []string{"ID", "NAME", "KIND", "LIFECYCLE", "CREATED"}, func(ws tenancy.Workspace) []string {
		return []string{ws.ID, cell(ws.Name), string(ws.Kind), orDash(string(ws.Lifecycle)), formatTime(ws.Created)}
	})
}

// SetWorkspaceLifecycle suspends (suspend true) or resumes a workspace.
func (c *Control) SetWorkspaceLifecycle(ctx context.Context, id string, suspend bool) error {
	ws, err := c.API.SetWorkspaceLifecycle(ctx, id, suspend)
	if err != nil {
		return err
	}
	return c.cli().say(ws, "Workspace %s is %s.\n", ws.ID, orDash(string(ws.Lifecycle)))
}

// CreateEnvironment creates an environment in workspace ws.
func (c *Control) CreateEnvironment(ctx context.Context, ws, slug string) error {
	e, err := c.API.CreateEnvironment(ctx, ws, slug)
	if err != nil {
		return err
	}
	return c.cli().say(e, "Created environment %s (%s) in workspace %s.\n", e.PublicID, cell(e.Slug), e.WorkspaceID)
}

// Environments lists the environments of workspace ws.
func (c *Control) Environments(ctx context.Context, ws string) error {
	out, err := c.API.Environments(ctx, ws)
	if err != nil {
		return err
	}
	return list(c.cli(), out, []string{"ID", "SLUG", "WORKSPACE", "CLIENT ENCRYPTION", "CREATED"}, func(e tenancy.Environment) []string {
		return []string{e.PublicID, cell(e.Slug), e.WorkspaceID, requiredOrDash(e.RequireClientEncryption), formatTime(e.Created)}
	})
}

// ConfigureEnvironment changes the settings cfg sets of environment env of
// workspace ws: whether every state of it takes only OpenTofu client-side
// encrypted writes.
func (c *Control) ConfigureEnvironment(ctx context.Context, ws, env string, cfg tenancy.EnvironmentConfig) error {
	if cfg.RequireClientEncryption == nil {
		return &UsageError{Message: "no setting to change", Hint: "give --require-client-encryption=true|false"}
	}
	e, err := c.API.ConfigureEnvironment(ctx, ws, env, cfg)
	if err != nil {
		return err
	}
	return c.cli().show(e, func() error {
		if e.RequireClientEncryption {
			fmt.Fprintf(c.Out, "Environment %s (%s): client-side encryption required; every state of it refuses plaintext writes (409 client_encryption_required).\n", e.PublicID, cell(e.Slug))
		} else {
			fmt.Fprintf(c.Out, "Environment %s (%s): client-side encryption not required; a state may still require it (kl state config NAME --require-client-encryption).\n", e.PublicID, cell(e.Slug))
		}
		return nil
	})
}

// requiredOrDash is "required" for a requirement that holds, else "-".
func requiredOrDash(required bool) string {
	if required {
		return "required"
	}
	return "-"
}

// IssueToken issues an automation token (env, scope) or a personal access
// token (user) and shows its secret, this once.
func (c *Control) IssueToken(ctx context.Context, req tenancy.TokenRequest) error {
	tok, err := c.API.IssueToken(ctx, req)
	if err != nil {
		return err
	}
	return c.cli().show(tok, func() error {
		what := "token"
		if tok.Kind == tenancy.TokenPersonal {
			what = "personal access token"
		}
		fmt.Fprintf(c.Out, "Issued %s %s", what, tok.ID)
		switch {
		case tok.EnvironmentID != "":
			fmt.Fprintf(c.Out, " (%s on %s)", tok.Scope, tok.EnvironmentID)
		case tok.UserID != "":
			fmt.Fprintf(c.Out, " (for %s)", cell(tok.UserID))
		}
		if !tok.Expires.IsZero() {
			fmt.Fprintf(c.Out, ", expiring %s", formatTime(tok.Expires))
		}
		fmt.Fprintln(c.Out, ".")
		fmt.Fprintf(c.Out, "Secret: %s\n", tok.Secret)
		fmt.Fprintln(c.Out, "Store this secret now: it will not be shown again.")
		return nil
	})
}

// Tokens lists the tokens of kind ("" for every kind), without secrets.
func (c *Control) Tokens(ctx context.Context, kind tenancy.TokenKind) error {
	out, err := c.API.Tokens(ctx, kind)
	if err != nil {
		return err
	}
	return list(c.cli(), out, []string{"ID", "KIND", "NAME", "ENVIRONMENT", "SCOPE", "USER", "CREATED", "LAST USED", "EXPIRES"}, func(t tenancy.Token) []string {
		return []string{t.ID, string(t.Kind), orDash(t.Name), orDash(t.EnvironmentID), orDash(string(t.Scope)), orDash(t.UserID), formatTime(t.Created), formatTime(t.LastUsed), formatTime(t.Expires)}
	})
}

// DeleteToken revokes a token (automation or personal).
func (c *Control) DeleteToken(ctx context.Context, id string) error {
	if err := c.API.RevokeToken(ctx, id); err != nil {
		return err
	}
	return c.cli().say(map[string]string{"revoked": id}, "Revoked token %s.\n", cell(id))
}

// AddGrant grants a personal access token access to an environment.
func (c *Control) AddGrant(ctx context.Context, token, env string) error {
	g, err := c.API.AddGrant(ctx, token, env)
	if err != nil {
		return err
	}
	return c.cli().say(g, "Granted %s access to %s.\n", g.TokenID, g.EnvironmentID)
}

// RevokeGrant takes a grant away.
func (c *Control) RevokeGrant(ctx context.Context, token, env string) error {
	if err := c.API.RevokeGrant(ctx, token, env); err != nil {
		return err
	}
	return c.cli().say(map[string]string{"revoked": token + "->" + env}, "Revoked the grant of %s on %s.\n", cell(token), cell(env))
}

// Grants lists a token's grants.
func (c *Control) Grants(ctx context.Context, token string) error {
	out, err := c.API.Grants(ctx, token)
	if err != nil {
		return err
	}
	return list(c.cli(), out, []string{"TOKEN", "ENVIRONMENT", "CREATED"}, func(g tenancy.Grant) []string {
		return []string{g.TokenID, g.EnvironmentID, formatTime(g.Created)}
	})
}

// PutMember adds a user to a workspace, or changes their role.
func (c *Control) PutMember(ctx context.Context, ws, user string, role tenancy.Role) error {
	m, err := c.API.PutMember(ctx, ws, user, role)
	if err != nil {
		return err
	}
	return c.cli().say(m, "%s is a%s %s of workspace %s.\n", cell(m.UserID), article(string(m.Role)), m.Role, cell(ws))
}

func article(word string) string {
	if word != "" && (word[0] == 'a' || word[0] == 'o') {
		return "n"
	}
	return ""
}

// RemoveMember removes a user from a workspace.
func (c *Control) RemoveMember(ctx context.Context, ws, user string) error {
	if err := c.API.RemoveMember(ctx, ws, user); err != nil {
		return err
	}
	return c.cli().say(map[string]string{"removed": user}, "Removed %s from workspace %s.\n", cell(user), cell(ws))
}

// Members lists a workspace's members.
func (c *Control) Members(ctx context.Context, ws string) error {
	out, err := c.API.Members(ctx, ws)
	if err != nil {
		return err
	}
	return list(c.cli(), out, []string{"USER", "ROLE"}, func(m tenancy.Member) []string {
		return []string{cell(m.UserID), string(m.Role)}
	})
}

// SetStateLifecycle archives (archive true) or restores a tenant's state.
func (c *Control) SetStateLifecycle(ctx context.Context, ws, env, state string, archive bool) error {
	if err := c.API.SetStateLifecycle(ctx, ws, env, state, archive); err != nil {
		return err
	}
	l := tenancy.LifecycleActive
	if archive {
		l = tenancy.LifecycleArchived
	}
	return c.cli().say(map[string]string{"state": state, "lifecycle": string(l)}, "State %s is %s.\n", cell(state), l)
}

// Audit lists the audit log, newest first; denied only lists refusals.
func (c *Control) Audit(ctx context.Context, denied bool, limit int) error {
	out, err := c.API.Audit(ctx, kilolock.AuditFilter{DeniedOnly: denied, Limit: limit})
	if err != nil {
		return err
	}
	return list(c.cli(), out, []string{"AT", "ACTOR", "ACTION", "TARGET", "RESULT", "FROM"}, func(e kilolock.AuditEntry) []string {
		result := "ok"
		if e.Denied {
			result = "denied"
			if e.Reason != "" {
				result += ": " + e.Reason
			}
		}
		return []string{formatTime(e.At), orDash(e.Actor), orDash(e.Action), orDash(e.Target), cell(result), orDash(e.From)}
	})
}

// serverControl is the ControlAPI of a server: its operator control API
// under /v1/api/.
type serverControl struct{ b *HTTPBackend }

var _ ControlAPI = serverControl{}

func wsPath(ws string) string { return "/v1/api/workspaces/" + url.PathEscape(ws) }

func tokenPath(id string) string { return "/v1/api/tokens/" + url.PathEscape(id) }

func (s serverControl) CreateWorkspace(ctx context.Context, name string, kind tenancy.WorkspaceKind, owner string) (*tenancy.Workspace, error) {
	var ws tenancy.Workspace
	body := map[string]string{"name": name, "kind": string(kind), "owner": owner}
	if err := s.b.do(ctx, http.MethodPost, "/v1/api/workspaces", nil, body, &ws); err != nil {
		return nil, err
	}
	return &ws, nil
}

func (s serverControl) Workspaces(ctx context.Context) ([]tenancy.Workspace, error) {
	var out []tenancy.Workspace
	err := s.b.do(ctx, http.MethodGet, "/v1/api/workspaces", nil, nil, &out)
	return out, err
}

func (s serverControl) SetWorkspaceLifecycle(ctx context.Context, id string, suspend bool) (*tenancy.Workspace, error) {
	action := "resume"
	if suspend {
		action = "suspend"
	}
	var ws tenancy.Workspace
	if err := s.b.do(ctx, http.MethodPost, wsPath(id)+"/"+action, nil, nil, &ws); err != nil {
		return nil, err
	}
	return &ws, nil
}

func (s serverControl) CreateEnvironment(ctx context.Context, ws, slug string) (*tenancy.Environment, error) {
	var e tenancy.Environment
	if err := s.b.do(ctx, http.MethodPost, wsPath(ws)+"/environments", nil, map[string]string{"slug": slug}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

func (s serverControl) Environments(ctx context.Context, ws string) ([]tenancy.Environment, error) {
	var out []tenancy.Environment
	err := s.b.do(ctx, http.MethodGet, wsPath(ws)+"/environments", nil, nil, &out)
	return out, err
}

func (s serverControl) ConfigureEnvironment(ctx context.Context, ws, env string, cfg tenancy.EnvironmentConfig) (*tenancy.Environment, error) {
	var e tenancy.Environment
	if err := s.b.do(ctx, http.MethodPatch, wsPath(ws)+"/environments/"+url.PathEscape(env), nil, cfg, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

func (s serverControl) IssueToken(ctx context.Context, req tenancy.TokenRequest) (*IssuedToken, error) {
	body := map[string]string{"kind": string(req.Kind)}
	if req.ExpiresIn > 0 {
		body["expires_in"] = req.ExpiresIn.String()
	}
	for k, v := range map[string]string{"name": req.Name, "environment_id": req.EnvironmentID, "scope": string(req.Scope), "user_id": req.UserID} {
		if v != "" {
			body[k] = v
		}
	}
	var tok IssuedToken
	if err := s.b.do(ctx, http.MethodPost, "/v1/api/tokens", nil, body, &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

func (s serverControl) Tokens(ctx context.Context, kind tenancy.TokenKind) ([]tenancy.Token, error) {
	q := url.Values{}
	if kind != "" {
		q.Set("kind", string(kind))
	}
	var out []tenancy.Token
	err := s.b.do(ctx, http.MethodGet, "/v1/api/tokens", q, nil, &out)
	return out, err
}

func (s serverControl) RevokeToken(ctx context.Context, id string) error {
	var out map[string]string
	return s.b.do(ctx, http.MethodDelete, tokenPath(id), nil, nil, &out)
}

func (s serverControl) AddGrant(ctx context.Context, token, env string) (*tenancy.Grant, error) {
	var g tenancy.Grant
	if err := s.b.do(ctx, http.MethodPut, tokenPath(token)+"/grants/"+url.PathEscape(env), nil, nil, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

func (s serverControl) RevokeGrant(ctx context.Context, token, env string) error {
	var out map[string]string
	return s.b.do(ctx, http.MethodDelete, tokenPath(token)+"/grants/"+url.PathEscape(env), nil, nil, &out)
}

func (s serverControl) Grants(ctx context.Context, token string) ([]tenancy.Grant, error) {
	var out []tenancy.Grant
	err := s.b.do(ctx, http.MethodGet, tokenPath(token)+"/grants", nil, nil, &out)
	return out, err
}

func (s serverControl) PutMember(ctx context.Context, ws, user string, role tenancy.Role) (*tenancy.Member, error) {
	var body any
	if role != "" {
		body = map[string]string{"role": string(role)}
	}
	var m tenancy.Member
	if err := s.b.do(ctx, http.MethodPut, wsPath(ws)+"/members/"+url.PathEscape(user), nil, body, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

func (s serverControl) RemoveMember(ctx context.Context, ws, user string) error {
	var out map[string]string
	return s.b.do(ctx, http.MethodDelete, wsPath(ws)+"/members/"+url.PathEscape(user), nil, nil, &out)
}

func (s serverControl) Members(ctx context.Context, ws string) ([]tenancy.Member, error) {
	var out []tenancy.Member
	err := s.b.do(ctx, http.MethodGet, wsPath(ws)+"/members", nil, nil, &out)
	return out, err
}

func (s serverControl) SetStateLifecycle(ctx context.Context, ws, env, state string, archive bool) error {
	action := "restore"
	if archive {
		action = "archive"
	}
	path := wsPath(ws) + "/environments/" + url.PathEscape(env) + "/states/" + url.PathEscape(state) + "/" + action
	var out map[string]string
	return s.b.do(ctx, http.MethodPost, path, nil, nil, &out)
}

func (s serverControl) Audit(ctx context.Context, f kilolock.AuditFilter) ([]kilolock.AuditEntry, error) {
	q := url.Values{}
	if f.DeniedOnly {
		q.Set("denied", "true")
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out []kilolock.AuditEntry
	err := s.b.do(ctx, http.MethodGet, "/v1/api/audit", q, nil, &out)
	return out, err
}

func (s serverControl) SetQuota(ctx context.Context, ch tenancy.QuotaChange) error {
	body := struct {
		tenancy.QuotaChange
		Clear bool `json:"clear,omitempty"`
	}{ch, ch.Limit == nil}
	var out map[string]any
	return s.b.do(ctx, http.MethodPut, "/v1/api/quotas", nil, body, &out)
}

func (s serverControl) Quotas(ctx context.Context) ([]kilolock.QuotaSetting, error) {
	var out []kilolock.QuotaSetting
	err := s.b.do(ctx, http.MethodGet, "/v1/api/quotas", nil, nil, &out)
	return out, err
}

// whoamiPath is where a server tells a token what it reaches.
const whoamiPath = "/v1/whoami"

func (s serverControl) Reach(ctx context.Context, _ string) (*tenancy.Reach, error) {
	var r tenancy.Reach
	err := s.b.do(ctx, http.MethodGet, whoamiPath, nil, nil, &r) // with kl's --token
	return &r, err
}

// Whoami shows what the token with secret reaches: each environment with
// its backend path, and the grants that reach nothing.
func (c *Control) Whoami(ctx context.Context, secret string) error {
	if secret == "" {
		return &UsageError{Message: "kl whoami needs the token to look at", Hint: "give it with --token klt_… or klp_… (KL_TOKEN)"}
	}
	r, err := c.API.Reach(ctx, secret)
	if err != nil {
		return err
	}
	return c.cli().show(r, func() error {
		what := "automation token, " + string(r.Token.Scope)
		if r.Token.Kind == tenancy.TokenPersonal {
			what = "personal access token of " + cell(r.Token.UserID)
		}
		expiry := "never expires"
		switch {
		case r.Expired:
			expiry = "EXPIRED at " + formatTime(r.Token.Expires) + ": every request is refused"
		case !r.Token.Expires.IsZero():
			expiry = "expires " + formatTime(r.Token.Expires)
		}
		fmt.Fprintf(c.Out, "Token %s (%s); %s.\n", r.Token.ID, what, expiry)
		if len(r.Environments) == 0 {
			fmt.Fprintln(c.Out, "It reaches no environment.")
		} else {
			tw := c.cli().table()
			row(tw, "ENVIRONMENT", "SLUG", "WORKSPACE", "ACCESS", "BACKEND PATH")
			for _, e := range r.Environments {
				access := "read"
				switch {
				case e.Writable:
					access = "read-write"
				case e.OutputsOnly:
					access = "outputs"
				}
				row(tw, e.PublicID, cell(e.Slug), e.WorkspaceID, access, e.Path)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, u := range r.Unusable {
			fmt.Fprintf(c.Out, "Its grant to %s reaches nothing: %s is not a member of that environment's workspace (%s).\n", u.EnvironmentID, cell(r.Token.UserID), u.Reason)
		}
		return nil
	})
}

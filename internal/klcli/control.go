package klcli

import (
	"context"
	"fmt"
	"io"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"

	"github.com/kilolock/kilolock/tenancy"
)

// Control runs kl's tenancy commands (workspaces, environments, members,
// tokens, PATs, grants, state lifecycles, audit) on kld's operator control
// API (a server's, with the operator token, or a database's in-process, as
// its operator) and prints their results.
type Control struct {
	API  *client.Client
	Out  io.Writer
	JSON bool
}

// IssuedToken is a token as it is issued: with its secret, shown once.
type IssuedToken = client.IssuedToken

// control opens the server or database g names and runs f on a Control
// over it.
func (g *Globals) control(ctx context.Context, json bool, f func(*Control) error) error {
	b, err := Open(ctx, Target{Server: g.Server, Database: g.Database, KeyFile: g.KeyFile, Token: g.Token, Timeout: g.Timeout, Actor: g.Actor})
	if err != nil {
		return err
	}
	defer b.Close()
	return f(&Control{API: b.c, Out: g.out(), JSON: json})
}

func (c *Control) cli() *CLI { return &CLI{Out: c.Out, JSON: c.JSON} }

// CreateWorkspace creates a workspace of kind (organization when empty),
// with owner as its owner when given.
func (c *Control) CreateWorkspace(ctx context.Context, name string, kind tenancy.WorkspaceKind, owner string) error {
	ws, err := c.API.CreateWorkspace(ctx, client.WorkspaceRequest{Name: name, Kind: kind, Owner: owner})
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
	set := c.API.ResumeWorkspace
	if suspend {
		set = c.API.SuspendWorkspace
	}
	ws, err := set(ctx, id)
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
	expires := ""
	if req.ExpiresIn > 0 {
		expires = req.ExpiresIn.String()
	}
	tok, err := c.API.IssueToken(ctx, client.TokenRequest{Kind: req.Kind, Name: req.Name, EnvironmentID: req.EnvironmentID,
		Scope: req.Scope, UserID: req.UserID, ExpiresIn: expires})
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
	if _, err := c.API.RevokeToken(ctx, id); err != nil {
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
	if _, err := c.API.RevokeGrant(ctx, token, env); err != nil {
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
	if _, err := c.API.RemoveMember(ctx, ws, user); err != nil {
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
	set := c.API.RestoreState
	if archive {
		set = c.API.ArchiveState
	}
	if _, err := set(ctx, ws, env, state); err != nil {
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
	out, err := c.API.Audit(ctx, client.AuditOptions{DeniedOnly: denied, Limit: limit})
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

// Whoami shows what the token with secret reaches: each environment with
// its backend path, and the grants that reach nothing.
func (c *Control) Whoami(ctx context.Context, secret string) error {
	if secret == "" {
		return &UsageError{Message: "kl whoami needs the token to look at", Hint: "give it with --token klt_… or klp_… (KL_TOKEN)"}
	}
	r, err := c.API.Whoami(ctx) // with kl's --token
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

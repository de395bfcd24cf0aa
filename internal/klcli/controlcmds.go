package klcli

import (
	"context"
	"fmt"
	"time"

	"github.com/alecthomas/kong"
	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// The tenancy commands (workspaces, environments, members, tokens, PATs,
// grants, state lifecycles, audit; trust policies and quotas beside them)
// run on kld's operator control API: a server's (--server with --token
// klo_…), or, with --database, a database's in-process as its operator,
// audited as "db:" and --actor.

// listed runs get on the API g names and shows the items it answers: a
// table of header and cells, or JSON (list).
func listed[T any](ctx context.Context, g *Globals, json bool, get func(*client.Client) ([]T, error), header []string, cells func(T) []string) error {
	return g.with(ctx, json, func(cli *CLI) error {
		items, err := get(cli.api())
		if err != nil {
			return err
		}
		return list(cli, items, header, cells)
	})
}

// said runs do on the API g names and shows what it did: show's JSON
// value, or its line of text.
func said[T any](ctx context.Context, g *Globals, json bool, do func(*client.Client) (T, error), show func(T) (any, string)) error {
	return g.with(ctx, json, func(cli *CLI) error {
		out, err := do(cli.api())
		if err != nil {
			return err
		}
		v, text := show(out)
		return cli.say(v, "%s", text)
	})
}

// gone runs do on the API g names, which takes away what id names, and
// says so: {key: id} as JSON, else text.
func gone[T any](ctx context.Context, g *Globals, json bool, key, id, text string, do func(*client.Client) (T, error)) error {
	return said(ctx, g, json, do, func(T) (any, string) { return map[string]string{key: id}, text })
}

// The groups below declare their subcommands' flags as fields and run
// them all in one Run: kong calls the Run of the selected command's group,
// which answers by the subcommand's name. Subcommands of the same
// arguments share one type.

// unknownCommand is a group's Run asked for a subcommand it does not
// declare: a mistake in kl, not in the command line.
func unknownCommand(k *kong.Context) error {
	return fmt.Errorf("kl: %q has no Run", k.Command())
}

// workspaceFlag is what a command in one workspace takes: --workspace,
// and --json.
type workspaceFlag struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
}

// workspaceArg names a workspace.
type workspaceArg struct {
	JSONFlag
	ID string `arg:"" help:"Workspace ID (ws_…)."`
}

// WorkspaceCmds are kl workspace create|list|suspend|resume.
type WorkspaceCmds struct {
	Create struct {
		JSONFlag
		Name  string `arg:"" help:"Workspace name."`
		Kind  string `help:"organization or personal." default:"organization" enum:"organization,personal"`
		Owner string `help:"User made the workspace's owner." placeholder:"USER"`
	} `cmd:"" help:"Create a workspace." example:"kl workspace create acme --owner alice"`
	List    JSONFlag     `cmd:"" help:"List the workspaces." example:"kl workspace list"`
	Suspend workspaceArg `cmd:"" help:"Suspend a workspace: its states refuse writes and apply locks (reads and plans still work) until it is resumed." example:"kl workspace suspend ws_0123456789abcdef"`
	Resume  workspaceArg `cmd:"" help:"Resume a suspended workspace." example:"kl workspace resume ws_0123456789abcdef"`
}

// Run runs the subcommand.
func (c *WorkspaceCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	shown := func(ws *tenancy.Workspace) (any, string) {
		return ws, fmt.Sprintf("Workspace %s is %s.\n", ws.ID, orDash(string(ws.Lifecycle)))
	}
	switch k.Selected().Name {
	case "create":
		a := &c.Create
		return said(ctx, g, a.JSON, func(api *client.Client) (*tenancy.Workspace, error) {
			return api.CreateWorkspace(ctx, client.WorkspaceRequest{Name: a.Name, Kind: tenancy.WorkspaceKind(a.Kind), Owner: a.Owner})
		}, func(ws *tenancy.Workspace) (any, string) {
			return ws, fmt.Sprintf("Created workspace %s (%s, %s).\n", ws.ID, cell(ws.Name), ws.Kind)
		})
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]tenancy.Workspace, error) { return api.Workspaces(ctx) },
			[]string{"ID", "NAME", "KIND", "LIFECYCLE", "CREATED"}, func(ws tenancy.Workspace) []string {
				return []string{ws.ID, cell(ws.Name), string(ws.Kind), orDash(string(ws.Lifecycle)), formatTime(ws.Created)}
			})
	case "suspend":
		return said(ctx, g, c.Suspend.JSON, func(api *client.Client) (*tenancy.Workspace, error) { return api.SuspendWorkspace(ctx, c.Suspend.ID) }, shown)
	case "resume":
		return said(ctx, g, c.Resume.JSON, func(api *client.Client) (*tenancy.Workspace, error) { return api.ResumeWorkspace(ctx, c.Resume.ID) }, shown)
	}
	return unknownCommand(k)
}

// EnvCmds are kl env create|list|config.
type EnvCmds struct {
	Create struct {
		workspaceFlag
		Slug string `arg:"" help:"Environment slug, e.g. prod."`
	} `cmd:"" help:"Create an environment in a workspace." example:"kl env create --workspace ws_0123456789abcdef prod"`
	List   workspaceFlag `cmd:"" help:"List a workspace's environments." example:"kl env list --workspace ws_0123456789abcdef"`
	Config struct {
		workspaceFlag
		Env string `arg:"" help:"Environment ID (env_…)."`
		// RequireClientEncryption is named as the state's setting is.
		RequireClientEncryption *bool `negatable:"" help:"Every state of the environment refuses plaintext writes and takes only OpenTofu client-side encrypted ones; =false lifts it (a state may still require it itself)."`
	} `cmd:"" help:"Configure an environment: whether its states require client-side encryption." example:"kl env config --workspace ws_0123456789abcdef env_0123456789abcdef --require-client-encryption"`
}

// Run runs the subcommand.
func (c *EnvCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "create":
		return said(ctx, g, c.Create.JSON, func(api *client.Client) (*tenancy.Environment, error) {
			return api.CreateEnvironment(ctx, c.Create.Workspace, c.Create.Slug)
		}, func(e *tenancy.Environment) (any, string) {
			return e, fmt.Sprintf("Created environment %s (%s) in workspace %s.\n", e.PublicID, cell(e.Slug), e.WorkspaceID)
		})
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]tenancy.Environment, error) {
			return api.Environments(ctx, c.List.Workspace)
		},
			[]string{"ID", "SLUG", "WORKSPACE", "CLIENT ENCRYPTION", "CREATED"}, func(e tenancy.Environment) []string {
				return []string{e.PublicID, cell(e.Slug), e.WorkspaceID, requiredOrDash(e.RequireClientEncryption), formatTime(e.Created)}
			})
	case "config":
		a := &c.Config
		return g.with(ctx, a.JSON, func(cli *CLI) error {
			return cli.ConfigureEnvironment(ctx, a.Workspace, a.Env, tenancy.EnvironmentConfig{RequireClientEncryption: a.RequireClientEncryption})
		})
	}
	return unknownCommand(k)
}

// tokenArg names a token (automation or personal).
type tokenArg struct {
	JSONFlag
	ID string `arg:"" help:"Token ID (tok_…)."`
}

// tokenFlags name a new token and say how long it lives.
type tokenFlags struct {
	Name      string `help:"A name to recognize the token by."`
	ExpiresIn string `help:"Lifetime, e.g. 90d or 720h, at most 3650d; the token stops working after it (default: never)." placeholder:"DURATION"`
}

// TokenCmds are kl token issue|list|revoke|operator: automation tokens.
type TokenCmds struct {
	Issue struct {
		JSONFlag
		Env   string `required:"" help:"Environment ID (env_…) the token reaches." placeholder:"ENV"`
		Scope string `help:"read-write, read, or outputs (reads only states' outputs, at their /outputs address, for terraform_remote_state)." default:"read-write" enum:"read,read-write,outputs"`
		tokenFlags
	} `cmd:"" help:"Issue an automation token for one environment; its secret is shown once." example:"kl token issue --env env_0123456789abcdef --scope read --expires-in 90d"`
	List   JSONFlag `cmd:"" help:"List the automation tokens (never their secrets)." example:"kl token list"`
	Revoke tokenArg `cmd:"" help:"Revoke a token." example:"kl token revoke tok_0123456789abcdef"`
	// Operator makes a secret locally: the operator token is kld's flag,
	// not a row of the store.
	Operator struct{} `cmd:"" help:"Print a new operator token (klo_ and 64 random hex digits) for kld --operator-token; made here, sent nowhere. Example: kld --auth=token --operator-token \"$(kl token operator)\"."`
}

// Run runs the subcommand.
func (c *TokenCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "issue":
		a := &c.Issue
		return issueToken(ctx, g, a.JSON, a.ExpiresIn, tenancy.TokenRequest{Kind: tenancy.TokenAutomation, Name: a.Name, EnvironmentID: a.Env, Scope: tenancy.Scope(a.Scope)})
	case "list":
		return listTokens(ctx, g, c.List.JSON, tenancy.TokenAutomation)
	case "revoke":
		return revokeToken(ctx, g, c.Revoke)
	case "operator":
		secret, err := NewOperatorSecret()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(g.documents(), secret)
		return err
	}
	return unknownCommand(k)
}

// NewOperatorSecret returns a new operator token: klo_ and 256 random bits
// in hex, the form kld --operator-token requires
// (httpbackend.ValidOperatorSecret).
func NewOperatorSecret() (string, error) {
	_, secret, err := tenancy.NewToken(tenancy.TokenOperator)
	return secret, err
}

// revokeToken revokes a token, automation or personal.
func revokeToken(ctx context.Context, g *Globals, a tokenArg) error {
	return gone(ctx, g, a.JSON, "revoked", a.ID, fmt.Sprintf("Revoked token %s.\n", cell(a.ID)),
		func(api *client.Client) (*client.Revoked, error) { return api.RevokeToken(ctx, a.ID) })
}

// issueToken issues the token req asks, expiring after expiresIn (a
// lifetime tenancy.ParseExpiry reads; "" never), and shows its secret.
func issueToken(ctx context.Context, g *Globals, json bool, expiresIn string, req tenancy.TokenRequest) error {
	var err error
	if req.ExpiresIn, err = tenancy.ParseExpiry(expiresIn); err != nil {
		return err
	}
	return g.with(ctx, json, func(cli *CLI) error { return cli.IssueToken(ctx, req) })
}

// listTokens lists the tokens of kind, without secrets.
func listTokens(ctx context.Context, g *Globals, json bool, kind tenancy.TokenKind) error {
	return listed(ctx, g, json, func(api *client.Client) ([]tenancy.Token, error) { return api.Tokens(ctx, kind) },
		[]string{"ID", "KIND", "NAME", "ENVIRONMENT", "SCOPE", "USER", "CREATED", "LAST USED", "EXPIRES"}, func(t tenancy.Token) []string {
			return []string{t.ID, string(t.Kind), orDash(t.Name), orDash(t.EnvironmentID), orDash(string(t.Scope)), orDash(t.UserID), formatTime(t.Created), formatTime(t.LastUsed), formatTime(t.Expires)}
		})
}

// PATCmds are kl pat create|list|delete: personal access tokens.
type PATCmds struct {
	Create struct {
		JSONFlag
		User string `required:"" help:"The user the token acts as." placeholder:"USER"`
		tokenFlags
	} `cmd:"" help:"Create a personal access token for a user; its secret is shown once. Give it access with kl grant add." example:"kl pat create --user alice"`
	List   JSONFlag `cmd:"" help:"List the personal access tokens (never their secrets)." example:"kl pat list"`
	Delete tokenArg `cmd:"" help:"Delete a personal access token." example:"kl pat delete tok_0123456789abcdef"`
}

// Run runs the subcommand.
func (c *PATCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "create":
		a := &c.Create
		return issueToken(ctx, g, a.JSON, a.ExpiresIn, tenancy.TokenRequest{Kind: tenancy.TokenPersonal, Name: a.Name, UserID: a.User})
	case "list":
		return listTokens(ctx, g, c.List.JSON, tenancy.TokenPersonal)
	case "delete":
		return revokeToken(ctx, g, c.Delete)
	}
	return unknownCommand(k)
}

// grantArgs name a grant: a token's on an environment.
type grantArgs struct {
	JSONFlag
	Token string `arg:"" help:"Token ID (tok_…)."`
	Env   string `arg:"" help:"Environment ID (env_…)."`
}

// GrantCmds are kl grant add|revoke|list.
type GrantCmds struct {
	Add    grantArgs `cmd:"" help:"Grant a personal access token access to an environment." example:"kl grant add tok_0123456789abcdef env_0123456789abcdef"`
	Revoke grantArgs `cmd:"" help:"Take a grant away." example:"kl grant revoke tok_0123456789abcdef env_0123456789abcdef"`
	List   struct {
		JSONFlag
		Token string `arg:"" help:"Token ID (tok_…)."`
	} `cmd:"" help:"List a token's grants." example:"kl grant list tok_0123456789abcdef"`
}

// Run runs the subcommand.
func (c *GrantCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "add":
		a := &c.Add
		return said(ctx, g, a.JSON, func(api *client.Client) (*tenancy.Grant, error) { return api.AddGrant(ctx, a.Token, a.Env) },
			func(gr *tenancy.Grant) (any, string) {
				return gr, fmt.Sprintf("Granted %s access to %s.\n", gr.TokenID, gr.EnvironmentID)
			})
	case "revoke":
		a := &c.Revoke
		return gone(ctx, g, a.JSON, "revoked", a.Token+"->"+a.Env, fmt.Sprintf("Revoked the grant of %s on %s.\n", cell(a.Token), cell(a.Env)),
			func(api *client.Client) (*client.Revoked, error) { return api.RevokeGrant(ctx, a.Token, a.Env) })
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]tenancy.Grant, error) { return api.Grants(ctx, c.List.Token) },
			[]string{"TOKEN", "ENVIRONMENT", "CREATED"}, func(gr tenancy.Grant) []string {
				return []string{gr.TokenID, gr.EnvironmentID, formatTime(gr.Created)}
			})
	}
	return unknownCommand(k)
}

// memberArgs name a workspace's member.
type memberArgs struct {
	workspaceFlag
	User string `arg:"" help:"User ID."`
}

// MemberCmds are kl member add|remove|list.
type MemberCmds struct {
	Add struct {
		memberArgs
		Role string `help:"owner, admin or member." default:"member" enum:"owner,admin,member"`
	} `cmd:"" help:"Add a user to a workspace, or change their role." example:"kl member add --workspace ws_0123456789abcdef bob --role admin"`
	Remove memberArgs    `cmd:"" help:"Remove a user from a workspace." example:"kl member remove --workspace ws_0123456789abcdef bob"`
	List   workspaceFlag `cmd:"" help:"List a workspace's members." example:"kl member list --workspace ws_0123456789abcdef"`
}

// Run runs the subcommand.
func (c *MemberCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "add":
		a := &c.Add
		return said(ctx, g, a.JSON, func(api *client.Client) (*tenancy.Member, error) {
			return api.PutMember(ctx, a.Workspace, a.User, tenancy.Role(a.Role))
		}, func(m *tenancy.Member) (any, string) {
			return m, fmt.Sprintf("%s is a%s %s of workspace %s.\n", cell(m.UserID), article(string(m.Role)), m.Role, cell(a.Workspace))
		})
	case "remove":
		a := &c.Remove
		return gone(ctx, g, a.JSON, "removed", a.User, fmt.Sprintf("Removed %s from workspace %s.\n", cell(a.User), cell(a.Workspace)),
			func(api *client.Client) (*client.Removed, error) { return api.RemoveMember(ctx, a.Workspace, a.User) })
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]tenancy.Member, error) { return api.Members(ctx, c.List.Workspace) },
			[]string{"USER", "ROLE"}, func(m tenancy.Member) []string { return []string{cell(m.UserID), string(m.Role)} })
	}
	return unknownCommand(k)
}

// stateLifecycleFlags name one tenant state.
type stateLifecycleFlags struct {
	workspaceFlag
	Env  string `required:"" help:"Environment ID (env_…)." placeholder:"ENV"`
	Name string `arg:"" help:"State name within the environment."`
}

// set archives (archive true) or restores the state f names.
func (f *stateLifecycleFlags) set(ctx context.Context, g *Globals, archive bool) error {
	return said(ctx, g, f.JSON, func(api *client.Client) (*client.LifecycleAnswer, error) {
		if archive {
			return api.ArchiveState(ctx, f.Workspace, f.Env, f.Name)
		}
		return api.RestoreState(ctx, f.Workspace, f.Env, f.Name)
	}, func(*client.LifecycleAnswer) (any, string) {
		l := tenancy.LifecycleActive
		if archive {
			l = tenancy.LifecycleArchived
		}
		return map[string]string{"state": f.Name, "lifecycle": string(l)}, fmt.Sprintf("State %s is %s.\n", cell(f.Name), l)
	})
}

// AuditCmd is kl audit.
type AuditCmd struct {
	JSONFlag
	Denied bool `help:"List only the refused requests."`
	Limit  int  `help:"Show at most N entries (default 100)." placeholder:"N"`
}

// Run runs the command.
func (c *AuditCmd) Run(ctx context.Context, g *Globals) error {
	return listed(ctx, g, c.JSON, func(api *client.Client) ([]kilolock.AuditEntry, error) {
		return api.Audit(ctx, client.AuditOptions{DeniedOnly: c.Denied, Limit: c.Limit})
	}, []string{"AT", "ACTOR", "ACTION", "TARGET", "RESULT", "FROM"}, func(e kilolock.AuditEntry) []string {
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

// WhoamiCmd is kl whoami.
type WhoamiCmd struct{ JSONFlag }

// Run runs the command.
func (c *WhoamiCmd) Run(ctx context.Context, g *Globals) error {
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Whoami(ctx, g.Token) })
}

// ConfigureEnvironment changes the settings cfg sets of environment env of
// workspace ws: whether every state of it takes only OpenTofu client-side
// encrypted writes.
func (c *CLI) ConfigureEnvironment(ctx context.Context, ws, env string, cfg tenancy.EnvironmentConfig) error {
	if cfg.RequireClientEncryption == nil {
		return &UsageError{Message: "no setting to change", Hint: "give --require-client-encryption=true|false"}
	}
	e, err := c.api().ConfigureEnvironment(ctx, ws, env, cfg)
	if err != nil {
		return err
	}
	return c.show(e, func() error {
		if e.RequireClientEncryption {
			fmt.Fprintf(c.Out, "Environment %s (%s): client-side encryption required; every state of it refuses plaintext writes (409 client_encryption_required).\n", e.PublicID, cell(e.Slug))
		} else {
			fmt.Fprintf(c.Out, "Environment %s (%s): client-side encryption not required; a state may still require it (kl state config NAME --require-client-encryption).\n", e.PublicID, cell(e.Slug))
		}
		return nil
	})
}

// IssueToken issues an automation token (env, scope) or a personal access
// token (user) and shows its secret, this once.
func (c *CLI) IssueToken(ctx context.Context, req tenancy.TokenRequest) error {
	expires := ""
	if req.ExpiresIn > 0 {
		expires = req.ExpiresIn.String()
	}
	tok, err := c.api().IssueToken(ctx, client.TokenRequest{Kind: req.Kind, Name: req.Name, EnvironmentID: req.EnvironmentID,
		Scope: req.Scope, UserID: req.UserID, ExpiresIn: expires})
	if err != nil {
		return err
	}
	return c.show(tok, func() error {
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

// Whoami shows what the token with secret reaches: each environment with
// its backend path, and the grants that reach nothing.
func (c *CLI) Whoami(ctx context.Context, secret string) error {
	if secret == "" {
		return &UsageError{Message: "kl whoami needs the token to look at", Hint: "give it with --token klt_… or klp_… (KL_TOKEN)"}
	}
	r, err := c.api().Whoami(ctx) // with kl's --token
	if err != nil {
		return err
	}
	return c.show(r, func() error {
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
			if err := writeTable(c, r.Environments, []string{"ENVIRONMENT", "SLUG", "WORKSPACE", "ACCESS", "BACKEND PATH"}, func(e tenancy.ReachableEnv) []string {
				access := "read"
				switch {
				case e.Writable:
					access = "read-write"
				case e.OutputsOnly:
					access = "outputs"
				}
				return []string{e.PublicID, cell(e.Slug), e.WorkspaceID, access, e.Path}
			}); err != nil {
				return err
			}
		}
		for _, u := range r.Unusable {
			fmt.Fprintf(c.Out, "Its grant to %s reaches nothing: %s is not a member of that environment's workspace (%s).\n", u.EnvironmentID, cell(r.Token.UserID), u.Reason)
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

func article(word string) string {
	if word != "" && (word[0] == 'a' || word[0] == 'o') {
		return "n"
	}
	return ""
}

// TrustCmds are kl trust add|list|remove: the trust policies of workload
// identity, through a server's control API (--server with the operator
// token) or on a database directly (--database), audited either way.
type TrustCmds struct {
	Add struct {
		JSONFlag
		Env       string   `required:"" placeholder:"ENV" help:"Environment ID (env_…) the tokens reach."`
		Issuer    string   `required:"" placeholder:"URL" help:"The issuer URL, HTTPS, exactly as the tokens' iss spells it: https://token.actions.githubusercontent.com (GitHub), https://gitlab.com (GitLab), the cluster's issuer (Kubernetes)."`
		Audience  string   `required:"" placeholder:"AUD" help:"The audience the job requests its token for, matched exactly."`
		Claim     []string `sep:"none" placeholder:"K=V" help:"A claim the token must carry with exactly this value, e.g. repository=org/app; repeat for several."`
		ClaimGlob []string `sep:"none" placeholder:"K=PATTERN" help:"A claim the token must carry matching the pattern (* any run of characters, ? one), e.g. ref=refs/heads/*; repeat for several."`
		Scope     string   `required:"" enum:"read,read-write,outputs" help:"What the tokens may do: read-write, read (reads and plans), or outputs (reads states' outputs only)."`
		State     string   `placeholder:"PATTERN" help:"Only the environment's states whose names match, e.g. 'app-*' (default: every state)."`
		MaxTTL    string   `name:"max-ttl" placeholder:"DURATION" help:"Longest lifetime (exp - iat) of a token accepted, 1m to 24h (default 1h)."`
	} `cmd:"" help:"Trust the OIDC ID tokens of CI jobs that match: they reach one environment with a scope, no secret stored in CI. Prints the policy's id (trs_…)." example:"kl trust add --env env_0123456789abcdef --issuer https://token.actions.githubusercontent.com --audience https://kl.example.com --claim repository=acme/infra --scope read-write"`
	List struct {
		JSONFlag
		Env string `placeholder:"ENV" help:"Only the policies of this environment (env_…)."`
	} `cmd:"" help:"List the trust policies." example:"kl trust list"`
	Remove struct {
		JSONFlag
		ID string `arg:"" help:"Trust policy ID (trs_…)."`
	} `cmd:"" help:"Remove a trust policy: the next request with a token only it accepted is refused (401)." example:"kl trust remove trs_0123456789abcdef"`
}

// Run runs the subcommand.
func (c *TrustCmds) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	switch k.Selected().Name {
	case "add":
		a := &c.Add
		p := trust.Policy{EnvironmentID: a.Env, Issuer: a.Issuer, Audience: a.Audience, Scope: tenancy.Scope(a.Scope), StatePattern: a.State}
		var err error
		if p.Claims, err = trust.ParseClaims(a.Claim); err != nil {
			return err
		}
		if p.ClaimGlobs, err = trust.ParseClaims(a.ClaimGlob); err != nil {
			return err
		}
		if a.MaxTTL != "" {
			d, err := time.ParseDuration(a.MaxTTL)
			if err != nil {
				return &UsageError{Message: fmt.Sprintf("--max-ttl %q is not a duration", a.MaxTTL), Hint: "e.g. --max-ttl 15m or 1h"}
			}
			p.MaxTTL = trust.Duration(d)
		}
		return g.with(ctx, a.JSON, func(cli *CLI) error { return cli.AddTrustPolicy(ctx, p) })
	case "list":
		return listed(ctx, g, c.List.JSON, func(api *client.Client) ([]trust.Policy, error) { return api.TrustPolicies(ctx, c.List.Env) },
			[]string{"ID", "ENVIRONMENT", "ISSUER", "AUDIENCE", "CLAIMS", "SCOPE", "STATES", "MAX TTL", "CREATED"}, func(p trust.Policy) []string {
				return []string{p.ID, p.EnvironmentID, cell(p.Issuer), cell(p.Audience), cell(p.ClaimsText()), string(p.Scope), cell(p.StatesText()), p.MaxTTL.String(), formatTime(p.Created)}
			})
	case "remove":
		id := c.Remove.ID
		return gone(ctx, g, c.Remove.JSON, "removed", id, fmt.Sprintf("Removed trust policy %s.\n", cell(id)),
			func(api *client.Client) (*client.Removed, error) { return api.RemoveTrustPolicy(ctx, id) })
	}
	return unknownCommand(k)
}

// Help is kl trust --help's long text.
func (c *TrustCmds) Help() string {
	return `A CI job sends the ID token its platform mints (GitHub Actions, GitLab CI, a
Kubernetes service account) as the HTTP backend's password, with the workspace
id as username (TF_HTTP_USERNAME, TF_HTTP_PASSWORD). kld accepts it when a
trust policy of the path's environment names its issuer (HTTPS, exactly), its
audience, and claims it carries (--claim exactly, --claim-glob with * and ?),
and its lifetime is at most --max-ttl. The request acts as the policy's scope,
and is named by the policy, the token's sub and its repository, ref and run.

  kl trust add --env env_… --issuer https://token.actions.githubusercontent.com \
    --audience https://kl.example.com --claim repository=org/app \
    --claim-glob ref=refs/heads/* --scope read-write

docs/workload-identity.md has the snippets for GitHub Actions, GitLab CI and
Kubernetes.`
}

// AddTrustPolicy adds a policy and prints its id.
func (c *CLI) AddTrustPolicy(ctx context.Context, p trust.Policy) error {
	out, err := c.api().AddTrustPolicy(ctx, p)
	if err != nil {
		return err
	}
	return c.say(out, "%s\nTrust policy %s: tokens of %s for %s with %s reach %s (%s, %s, max TTL %s).\n",
		out.ID, out.ID, cell(out.Issuer), cell(out.Audience), out.ClaimsText(), out.EnvironmentID, out.Scope, out.StatesText(), out.MaxTTL)
}

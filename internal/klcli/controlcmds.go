package klcli

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock/tenancy"
)

// The tenancy commands: each goes to the server's operator control API
// (--server with --token klo_…) or, with --database, to the database
// directly through tenancy.Control, audited as "db:" and --actor.

// WorkspaceCmds are kl workspace create|list|suspend|resume.
type WorkspaceCmds struct {
	Create  WorkspaceCreateCmd  `cmd:"" help:"Create a workspace."`
	List    WorkspaceListCmd    `cmd:"" help:"List the workspaces."`
	Suspend WorkspaceSuspendCmd `cmd:"" help:"Suspend a workspace: its states refuse writes and apply locks (reads and plans still work) until it is resumed."`
	Resume  WorkspaceResumeCmd  `cmd:"" help:"Resume a suspended workspace."`
}

// WorkspaceCreateCmd is kl workspace create.
type WorkspaceCreateCmd struct {
	JSONFlag
	Name  string `arg:"" help:"Workspace name."`
	Kind  string `help:"organization or personal." default:"organization" enum:"organization,personal"`
	Owner string `help:"User made the workspace's owner." placeholder:"USER"`
}

// Run runs the command.
func (c *WorkspaceCreateCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error {
		return ct.CreateWorkspace(ctx, c.Name, tenancy.WorkspaceKind(c.Kind), c.Owner)
	})
}

// WorkspaceListCmd is kl workspace list.
type WorkspaceListCmd struct{ JSONFlag }

// Run runs the command.
func (c *WorkspaceListCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Workspaces(ctx) })
}

// WorkspaceSuspendCmd is kl workspace suspend.
type WorkspaceSuspendCmd struct {
	JSONFlag
	ID string `arg:"" help:"Workspace ID (ws_…)."`
}

// Run runs the command.
func (c *WorkspaceSuspendCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.SetWorkspaceLifecycle(ctx, c.ID, true) })
}

// WorkspaceResumeCmd is kl workspace resume.
type WorkspaceResumeCmd struct {
	JSONFlag
	ID string `arg:"" help:"Workspace ID (ws_…)."`
}

// Run runs the command.
func (c *WorkspaceResumeCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.SetWorkspaceLifecycle(ctx, c.ID, false) })
}

// EnvCmds are kl env create|list|config.
type EnvCmds struct {
	Create EnvCreateCmd `cmd:"" help:"Create an environment in a workspace."`
	List   EnvListCmd   `cmd:"" help:"List a workspace's environments."`
	Config EnvConfigCmd `cmd:"" help:"Configure an environment: whether its states require client-side encryption."`
}

// EnvConfigCmd is kl env config.
type EnvConfigCmd struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
	Env       string `arg:"" help:"Environment ID (env_…)."`
	// RequireClientEncryption is named as the state's setting is.
	RequireClientEncryption *bool `negatable:"" help:"Every state of the environment refuses plaintext writes and takes only OpenTofu client-side encrypted ones; =false lifts it (a state may still require it itself)."`
}

// Run runs the command.
func (c *EnvConfigCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error {
		return ct.ConfigureEnvironment(ctx, c.Workspace, c.Env, tenancy.EnvironmentConfig{RequireClientEncryption: c.RequireClientEncryption})
	})
}

// EnvCreateCmd is kl env create.
type EnvCreateCmd struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
	Slug      string `arg:"" help:"Environment slug, e.g. prod."`
}

// Run runs the command.
func (c *EnvCreateCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.CreateEnvironment(ctx, c.Workspace, c.Slug) })
}

// EnvListCmd is kl env list.
type EnvListCmd struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
}

// Run runs the command.
func (c *EnvListCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Environments(ctx, c.Workspace) })
}

// TokenCmds are kl token issue|list|revoke: automation tokens.
type TokenCmds struct {
	Issue  TokenIssueCmd  `cmd:"" help:"Issue an automation token for one environment; its secret is shown once."`
	List   TokenListCmd   `cmd:"" help:"List the automation tokens (never their secrets)."`
	Revoke TokenRevokeCmd `cmd:"" help:"Revoke a token."`
	// Operator makes a secret locally: the operator token is kld's flag,
	// not a row of the store.
	Operator TokenOperatorCmd `cmd:"" help:"Print a new operator token (klo_ and 64 random hex digits) for kld --operator-token; made here, sent nowhere. Example: kld --auth=token --operator-token \"$(kl token operator)\"."`
}

// TokenOperatorCmd is kl token operator.
type TokenOperatorCmd struct{}

// Run runs the command.
func (c *TokenOperatorCmd) Run(g *Globals) error {
	secret, err := NewOperatorSecret()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(g.documents(), secret)
	return err
}

// NewOperatorSecret returns a new operator token: klo_ and 256 random bits
// in hex, the form kld --operator-token requires
// (httpbackend.ValidOperatorSecret).
func NewOperatorSecret() (string, error) {
	_, secret, err := tenancy.NewToken(tenancy.TokenOperator)
	return secret, err
}

// TokenIssueCmd is kl token issue.
type TokenIssueCmd struct {
	JSONFlag
	Env       string `required:"" help:"Environment ID (env_…) the token reaches." placeholder:"ENV"`
	Scope     string `help:"read-write, read, or outputs (reads only states' outputs, at their /outputs address, for terraform_remote_state)." default:"read-write" enum:"read,read-write,outputs"`
	Name      string `help:"A name to recognize the token by."`
	ExpiresIn string `help:"Lifetime, e.g. 90d or 720h, at most 3650d; the token stops working after it (default: never)." placeholder:"DURATION"`
}

// Run runs the command.
func (c *TokenIssueCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error {
		expiresIn, err := tenancy.ParseExpiry(c.ExpiresIn)
		if err != nil {
			return err
		}
		return ct.IssueToken(ctx, tenancy.TokenRequest{Kind: tenancy.TokenAutomation, Name: c.Name, EnvironmentID: c.Env, Scope: tenancy.Scope(c.Scope), ExpiresIn: expiresIn})
	})
}

// TokenListCmd is kl token list.
type TokenListCmd struct{ JSONFlag }

// Run runs the command.
func (c *TokenListCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Tokens(ctx, tenancy.TokenAutomation) })
}

// TokenRevokeCmd is kl token revoke.
type TokenRevokeCmd struct {
	JSONFlag
	ID string `arg:"" help:"Token ID (tok_…)."`
}

// Run runs the command.
func (c *TokenRevokeCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.DeleteToken(ctx, c.ID) })
}

// PATCmds are kl pat create|list|delete: personal access tokens.
type PATCmds struct {
	Create PATCreateCmd `cmd:"" help:"Create a personal access token for a user; its secret is shown once. Give it access with kl grant add."`
	List   PATListCmd   `cmd:"" help:"List the personal access tokens (never their secrets)."`
	Delete PATDeleteCmd `cmd:"" help:"Delete a personal access token."`
}

// PATCreateCmd is kl pat create.
type PATCreateCmd struct {
	JSONFlag
	User      string `required:"" help:"The user the token acts as." placeholder:"USER"`
	Name      string `help:"A name to recognize the token by."`
	ExpiresIn string `help:"Lifetime, e.g. 90d or 720h, at most 3650d; the token stops working after it (default: never)." placeholder:"DURATION"`
}

// Run runs the command.
func (c *PATCreateCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error {
		expiresIn, err := tenancy.ParseExpiry(c.ExpiresIn)
		if err != nil {
			return err
		}
		return ct.IssueToken(ctx, tenancy.TokenRequest{Kind: tenancy.TokenPersonal, Name: c.Name, UserID: c.User, ExpiresIn: expiresIn})
	})
}

// PATListCmd is kl pat list.
type PATListCmd struct{ JSONFlag }

// Run runs the command.
func (c *PATListCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Tokens(ctx, tenancy.TokenPersonal) })
}

// PATDeleteCmd is kl pat delete.
type PATDeleteCmd struct {
	JSONFlag
	ID string `arg:"" help:"Token ID (tok_…)."`
}

// Run runs the command.
func (c *PATDeleteCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.DeleteToken(ctx, c.ID) })
}

// GrantCmds are kl grant add|revoke|list.
type GrantCmds struct {
	Add    GrantAddCmd    `cmd:"" help:"Grant a personal access token access to an environment."`
	Revoke GrantRevokeCmd `cmd:"" help:"Take a grant away."`
	List   GrantListCmd   `cmd:"" help:"List a token's grants."`
}

// GrantAddCmd is kl grant add.
type GrantAddCmd struct {
	JSONFlag
	Token string `arg:"" help:"Token ID (tok_…)."`
	Env   string `arg:"" help:"Environment ID (env_…)."`
}

// Run runs the command.
func (c *GrantAddCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.AddGrant(ctx, c.Token, c.Env) })
}

// GrantRevokeCmd is kl grant revoke.
type GrantRevokeCmd struct {
	JSONFlag
	Token string `arg:"" help:"Token ID (tok_…)."`
	Env   string `arg:"" help:"Environment ID (env_…)."`
}

// Run runs the command.
func (c *GrantRevokeCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.RevokeGrant(ctx, c.Token, c.Env) })
}

// GrantListCmd is kl grant list.
type GrantListCmd struct {
	JSONFlag
	Token string `arg:"" help:"Token ID (tok_…)."`
}

// Run runs the command.
func (c *GrantListCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Grants(ctx, c.Token) })
}

// MemberCmds are kl member add|remove|list.
type MemberCmds struct {
	Add    MemberAddCmd    `cmd:"" help:"Add a user to a workspace, or change their role."`
	Remove MemberRemoveCmd `cmd:"" help:"Remove a user from a workspace."`
	List   MemberListCmd   `cmd:"" help:"List a workspace's members."`
}

// MemberAddCmd is kl member add.
type MemberAddCmd struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
	User      string `arg:"" help:"User ID."`
	Role      string `help:"owner, admin or member." default:"member" enum:"owner,admin,member"`
}

// Run runs the command.
func (c *MemberAddCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.PutMember(ctx, c.Workspace, c.User, tenancy.Role(c.Role)) })
}

// MemberRemoveCmd is kl member remove.
type MemberRemoveCmd struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
	User      string `arg:"" help:"User ID."`
}

// Run runs the command.
func (c *MemberRemoveCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.RemoveMember(ctx, c.Workspace, c.User) })
}

// MemberListCmd is kl member list.
type MemberListCmd struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
}

// Run runs the command.
func (c *MemberListCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Members(ctx, c.Workspace) })
}

// stateLifecycleFlags name one tenant state.
type stateLifecycleFlags struct {
	JSONFlag
	Workspace string `required:"" help:"Workspace ID (ws_…)." placeholder:"WS"`
	Env       string `required:"" help:"Environment ID (env_…)." placeholder:"ENV"`
	Name      string `arg:"" help:"State name within the environment."`
}

// StateArchiveCmd is kl state archive.
type StateArchiveCmd struct{ stateLifecycleFlags }

// Run runs the command.
func (c *StateArchiveCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error {
		return ct.SetStateLifecycle(ctx, c.Workspace, c.Env, c.Name, true)
	})
}

// StateRestoreCmd is kl state restore.
type StateRestoreCmd struct{ stateLifecycleFlags }

// Run runs the command.
func (c *StateRestoreCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error {
		return ct.SetStateLifecycle(ctx, c.Workspace, c.Env, c.Name, false)
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
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Audit(ctx, c.Denied, c.Limit) })
}

// WhoamiCmd is kl whoami.
type WhoamiCmd struct{ JSONFlag }

// Run runs the command.
func (c *WhoamiCmd) Run(ctx context.Context, g *Globals) error {
	return g.control(ctx, c.JSON, func(ct *Control) error { return ct.Whoami(ctx, g.Token) })
}

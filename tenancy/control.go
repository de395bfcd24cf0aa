package tenancy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
)

// Control is the control plane of the authenticated lane on a
// TenantStore: workspaces and their lifecycle, environments, members,
// tokens, grants, state lifecycles and the audit log. The HTTP control API
// and kl --database both run through it, so a change is validated and
// audited the same whichever way it comes.
//
// Invalid input is an *InvalidError with a code (invalid_workspace,
// invalid_slug, invalid_role, invalid_member, invalid_token, invalid_id,
// invalid_state_name) and a hint: names are bounded and validated (see
// ValidWorkspaceName, ValidUserID) before anything reaches the store.
// Store errors are returned as the store words them: ErrNotFound for a
// missing workspace, environment, token, member or grant, ErrConflict for
// something already there.
//
// Every change appends one AuditEntry once it is made; reads are not
// audited. A change whose audit entry cannot be written is reported as an
// error, alongside its result where it has one: the change stays made, as
// the store has no transaction spanning both.
type Control struct {
	store TenantStore
}

// explain turns a store's err into a *ControlError when it is (wraps) want;
// other errors are returned as they are.
func explain(err, want error, code, message, hint string) error {
	if err != nil && errors.Is(err, want) {
		return &kilolock.ControlError{Err: want, Code: code, Message: message, Hint: hint}
	}
	return err
}

func workspaceNotFound(err error, id string) error {
	return explain(err, kilolock.ErrNotFound, "workspace_not_found", fmt.Sprintf("there is no workspace %q", id), "kl workspace list shows the workspaces")
}

func environmentNotFound(err error, id string) error {
	return explain(err, kilolock.ErrNotFound, "environment_not_found", fmt.Sprintf("there is no environment %q", id), "use the environment's public id (env_…); kl env list --workspace WS shows them")
}

// NewControl returns a Control over s.
func NewControl(s TenantStore) *Control { return &Control{store: s} }

// audit records the change action on target, made by by. It runs even when
// ctx is cancelled: the change is made and must not go unrecorded.
func (c *Control) audit(ctx context.Context, by kilolock.Caller, action, target string) error {
	actor := by.Actor
	if actor == "" {
		actor = "anonymous"
	}
	e := &kilolock.AuditEntry{Actor: actor, Action: action, Target: target, From: by.From, RequestID: by.RequestID}
	if err := c.store.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// CreateWorkspace creates a workspace of kind (WorkspaceOrganization when
// empty) and, when owner is not empty, makes owner its owner. Audited as
// workspace.create.
func (c *Control) CreateWorkspace(ctx context.Context, by kilolock.Caller, name string, kind WorkspaceKind, owner string) (*Workspace, error) {
	if kind == "" {
		kind = WorkspaceOrganization
	}
	if name == "" || (kind != WorkspacePersonal && kind != WorkspaceOrganization) {
		return nil, &kilolock.InvalidError{Code: "invalid_workspace", Message: "a workspace needs a name and a kind of personal or organization", Hint: `send {"name": "acme", "kind": "organization", "owner": "alice"}`}
	}
	if kind == WorkspacePersonal && owner == "" {
		return nil, &kilolock.InvalidError{Code: "invalid_workspace", Message: "a personal workspace needs its owner", Hint: `send {"name": "alice", "kind": "personal", "owner": "alice"}`}
	}
	if err := ValidWorkspaceName(name); err != nil {
		return nil, err
	}
	if owner != "" {
		if err := ValidUserID(owner); err != nil {
			return nil, err
		}
	}
	ws := &Workspace{ID: kilolock.NewID("ws_"), Name: name, Kind: kind}
	if err := c.store.CreateWorkspace(ctx, ws); err != nil {
		return nil, err
	}
	if owner != "" {
		if err := c.store.PutMember(ctx, ws.ID, Member{UserID: owner, Role: RoleOwner}); err != nil {
			return nil, err
		}
	}
	return ws, c.audit(ctx, by, "workspace.create", ws.ID)
}

// Workspaces lists every workspace by id.
func (c *Control) Workspaces(ctx context.Context) ([]Workspace, error) {
	return c.store.Workspaces(ctx)
}

// SuspendWorkspace suspends a workspace: its states refuse writes and locks
// until it is resumed. It returns the workspace as it now is; ErrNotFound
// when missing. Audited as workspace.suspend.
func (c *Control) SuspendWorkspace(ctx context.Context, by kilolock.Caller, id string) (*Workspace, error) {
	return c.setWorkspaceLifecycle(ctx, by, id, LifecycleSuspended, "workspace.suspend")
}

// ResumeWorkspace resumes a suspended workspace. It returns the workspace
// as it now is; ErrNotFound when missing. Audited as workspace.resume.
func (c *Control) ResumeWorkspace(ctx context.Context, by kilolock.Caller, id string) (*Workspace, error) {
	return c.setWorkspaceLifecycle(ctx, by, id, LifecycleActive, "workspace.resume")
}

func (c *Control) setWorkspaceLifecycle(ctx context.Context, by kilolock.Caller, id string, l Lifecycle, action string) (*Workspace, error) {
	if err := kilolock.ValidID("workspace", id); err != nil {
		return nil, err
	}
	if err := c.store.SetWorkspaceLifecycle(ctx, id, l); err != nil {
		return nil, workspaceNotFound(err, id)
	}
	ws, err := c.store.Workspace(ctx, id)
	if err != nil {
		return nil, err
	}
	return ws, c.audit(ctx, by, action, id)
}

// CreateEnvironment creates an environment with slug in workspace
// workspaceID. The slug follows the rules of state names (invalid_slug).
// ErrNotFound when the workspace is missing, ErrConflict when the slug is
// taken in it. Audited as environment.create.
func (c *Control) CreateEnvironment(ctx context.Context, by kilolock.Caller, workspaceID, slug string) (*Environment, error) {
	if kilolock.ValidStateName(slug) != nil || strings.HasPrefix(slug, "env_") {
		return nil, &kilolock.InvalidError{Code: "invalid_slug", Message: fmt.Sprintf("%s is not a valid environment slug", kilolock.Clip(slug)), Hint: "use 1 to 128 letters, digits, '.', '-' or '_', not starting with env_ (the prefix of public ids)"}
	}
	if err := kilolock.ValidID("workspace", workspaceID); err != nil {
		return nil, err
	}
	e := &Environment{PublicID: kilolock.NewID("env_"), Slug: slug, WorkspaceID: workspaceID}
	if err := c.store.CreateEnvironment(ctx, e); err != nil {
		err = workspaceNotFound(err, workspaceID)
		return nil, explain(err, kilolock.ErrConflict, "slug_taken", fmt.Sprintf("workspace %s already has an environment %q", workspaceID, slug), "pick another slug; kl env list --workspace "+workspaceID+" shows the taken ones")
	}
	return e, c.audit(ctx, by, "environment.create", e.PublicID)
}

// Environments lists a workspace's environments by slug. ErrNotFound when
// the workspace is missing.
func (c *Control) Environments(ctx context.Context, workspaceID string) ([]Environment, error) {
	if err := kilolock.ValidID("workspace", workspaceID); err != nil {
		return nil, err
	}
	if _, err := c.store.Workspace(ctx, workspaceID); err != nil {
		return nil, workspaceNotFound(err, workspaceID)
	}
	return c.store.Environments(ctx, workspaceID)
}

// EnvironmentConfig are the settings of an environment an operator
// changes; nil leaves a setting as it is.
type EnvironmentConfig struct {
	// RequireClientEncryption true makes every state of the environment
	// take only OpenTofu client-side encrypted writes; a state's own
	// setting cannot lift it.
	RequireClientEncryption *bool `json:"require_client_encryption"`
}

// ConfigureEnvironment changes the settings cfg sets of environment envID
// of workspace workspaceID and returns the environment. ErrNotFound when the
// environment is missing or not the workspace's; an *InvalidError
// (no_setting) when cfg sets nothing. Audited as environment.config.
func (c *Control) ConfigureEnvironment(ctx context.Context, by kilolock.Caller, workspaceID, envID string, cfg EnvironmentConfig) (*Environment, error) {
	if cfg.RequireClientEncryption == nil {
		return nil, &kilolock.InvalidError{Code: "no_setting", Message: "the request changes no setting of the environment", Hint: `send {"require_client_encryption": true} (or false)`}
	}
	env, err := c.environmentOf(ctx, workspaceID, envID)
	if err != nil {
		return nil, err
	}
	if err := c.store.SetEnvironmentRequireClientEncryption(ctx, env.PublicID, *cfg.RequireClientEncryption); err != nil {
		return nil, err
	}
	env.RequireClientEncryption = *cfg.RequireClientEncryption
	return env, c.audit(ctx, by, "environment.config", env.PublicID)
}

// PutMember makes userID a member of workspace workspaceID with role
// (RoleMember when empty), or changes the role of a member. ErrNotFound
// when the workspace is missing. Audited as member.add, on
// "WORKSPACE/USER".
func (c *Control) PutMember(ctx context.Context, by kilolock.Caller, workspaceID, userID string, role Role) (Member, error) {
	switch role {
	case "":
		role = RoleMember
	case RoleOwner, RoleAdmin, RoleMember:
	default:
		return Member{}, &kilolock.InvalidError{Code: "invalid_role", Message: fmt.Sprintf("unknown role %q", role), Hint: "use owner, admin or member"}
	}
	if err := ValidUserID(userID); err != nil {
		return Member{}, err
	}
	m := Member{UserID: userID, Role: role}
	if err := c.checkMembers(ctx, workspaceID, userID, role); err != nil {
		return Member{}, err
	}
	if err := c.store.PutMember(ctx, workspaceID, m); err != nil {
		return Member{}, workspaceNotFound(err, workspaceID)
	}
	return m, c.audit(ctx, by, "member.add", workspaceID+"/"+userID)
}

// RemoveMember removes userID from workspace workspaceID: the user's
// personal access tokens stop reaching it at once. ErrNotFound when the
// user is not a member. Audited as member.remove, on "WORKSPACE/USER".
func (c *Control) RemoveMember(ctx context.Context, by kilolock.Caller, workspaceID, userID string) error {
	if err := ValidUserID(userID); err != nil {
		return err
	}
	if err := c.checkMembers(ctx, workspaceID, userID, ""); err != nil {
		return err
	}
	if err := c.store.RemoveMember(ctx, workspaceID, userID); err != nil {
		return explain(err, kilolock.ErrNotFound, "member_not_found", fmt.Sprintf("%s is not a member of workspace %s", userID, workspaceID), "kl member list "+workspaceID+" shows the members")
	}
	return c.audit(ctx, by, "member.remove", workspaceID+"/"+userID)
}

// checkMembers applies a workspace's membership rules to giving userID
// role (removing userID when role is ""): a personal workspace has one
// member, its owner; an organization keeps at least one owner.
func (c *Control) checkMembers(ctx context.Context, workspaceID, userID string, role Role) error {
	if err := kilolock.ValidID("workspace", workspaceID); err != nil {
		return err
	}
	ws, err := c.store.Workspace(ctx, workspaceID)
	if err != nil {
		return workspaceNotFound(err, workspaceID)
	}
	members, err := c.store.Members(ctx, workspaceID)
	if err != nil {
		return err
	}
	owners, isOwner := 0, false
	for _, m := range members {
		if m.Role == RoleOwner {
			owners++
			isOwner = isOwner || m.UserID == userID
		}
	}
	switch {
	case ws.Kind == WorkspacePersonal && (role != RoleOwner || (owners > 0 && !isOwner)):
		return &kilolock.ControlError{Err: kilolock.ErrConflict, Code: "personal_workspace",
			Message: fmt.Sprintf("workspace %s is personal: its one member is its owner", workspaceID),
			Hint:    "share environments from an organization workspace (kl workspace create NAME --kind organization)"}
	case isOwner && owners == 1 && role != RoleOwner:
		return &kilolock.ControlError{Err: kilolock.ErrConflict, Code: "last_owner",
			Message: fmt.Sprintf("%s is the last owner of workspace %s", userID, workspaceID),
			Hint:    "make another member an owner first (kl member add --workspace " + workspaceID + " USER --role owner)"}
	}
	return nil
}

// Members lists a workspace's members by user id (empty when the workspace
// is missing).
func (c *Control) Members(ctx context.Context, workspaceID string) ([]Member, error) {
	if err := kilolock.ValidID("workspace", workspaceID); err != nil {
		return nil, err
	}
	return c.store.Members(ctx, workspaceID)
}

// TokenRequest asks Control for a token. An automation token needs
// EnvironmentID and a Scope (ScopeReadWrite when empty; ScopeRead and
// ScopeOutputs read less), and no UserID. A
// personal access token needs UserID and neither EnvironmentID nor Scope:
// its access comes from grants.
type TokenRequest struct {
	Kind          TokenKind // TokenAutomation or TokenPersonal
	Name          string    // to recognize the token by; optional
	EnvironmentID string
	Scope         Scope
	UserID        string
	// ExpiresIn, when positive, makes the token stop working that long
	// after it is issued (by the clock of whoever runs Control); zero means
	// never.
	ExpiresIn time.Duration
}

// MaxTokenLifetime is the longest lifetime a token may be issued with: ten
// years of 365 days. A token that should outlive it is one that should not
// expire (a zero lifetime).
const MaxTokenLifetime = 3650 * 24 * time.Hour

// errLifetimeTooLong refuses a lifetime past MaxTokenLifetime, given as
// what.
func errLifetimeTooLong(what string) error {
	return &kilolock.InvalidError{Code: "invalid_token",
		Message: fmt.Sprintf("a token lifetime of %s is longer than the maximum of 3650 days (10 years)", what),
		Hint:    "give at most 3650d (87600h), or no lifetime for a token that does not expire"}
}

// ParseExpiry parses a token lifetime: a Go duration ("720h") or a number
// of days ("90d"). An empty string means never (zero). A lifetime past
// MaxTokenLifetime is refused, however many digits it has.
func ParseExpiry(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok && err != nil && days != "" && days[0] != '0' && strings.Trim(days, "0123456789") == "" {
		// Compared as digits, not multiplied: a count of days can overflow
		// a Duration (213503983d wraps around to 16 hours).
		const maxDays = int64(MaxTokenLifetime / (24 * time.Hour))
		n, perr := strconv.ParseInt(days, 10, 64)
		if perr != nil || n > maxDays {
			return 0, errLifetimeTooLong(s)
		}
		d, err = time.Duration(n)*24*time.Hour, nil
	}
	if err != nil && strings.Contains(err.Error(), "invalid duration") && strings.Trim(s, "0123456789.hmsuµn") == "" {
		// time.ParseDuration refuses a well-formed duration past 292
		// years as invalid.
		return 0, errLifetimeTooLong(s)
	}
	if err != nil || d <= 0 {
		return 0, &kilolock.InvalidError{Code: "invalid_token", Message: fmt.Sprintf("%q is not a token lifetime", s), Hint: "give a positive duration: 90d, 720h, 30m"}
	}
	if d > MaxTokenLifetime {
		return 0, errLifetimeTooLong(s)
	}
	return d, nil
}

// IssueToken issues a token and returns it with its secret, which is shown
// this once: the store keeps only its hash. A request that does not fit
// its kind is invalid_token (operator tokens are not issued here);
// ErrNotFound when an automation token's environment is missing. Audited
// as token.issue.
func (c *Control) IssueToken(ctx context.Context, by kilolock.Caller, req TokenRequest) (tok *Token, secret string, err error) {
	invalid := func(msg string) error {
		return &kilolock.InvalidError{Code: "invalid_token", Message: msg, Hint: `send {"kind": "automation", "environment_id": "env_…", "scope": "read-write"} (or "read", or "outputs") or {"kind": "personal", "user_id": "alice"}`}
	}
	switch req.Kind {
	case TokenAutomation:
		if req.Scope == "" {
			req.Scope = ScopeReadWrite
		}
		if req.EnvironmentID == "" || req.UserID != "" || !req.Scope.Valid() {
			return nil, "", invalid("an automation token needs an environment_id and a scope of read, read-write or outputs")
		}
	case TokenPersonal:
		if req.UserID == "" || req.EnvironmentID != "" || req.Scope != "" {
			return nil, "", invalid("a personal access token needs a user_id; its access comes from grants")
		}
	default:
		return nil, "", invalid(fmt.Sprintf("kind %s: want automation or personal", kilolock.Clip(string(req.Kind))))
	}
	if err := validTokenName(req.Name); err != nil {
		return nil, "", err
	}
	if req.UserID != "" {
		if err := ValidUserID(req.UserID); err != nil {
			return nil, "", err
		}
	}
	if req.EnvironmentID != "" {
		if err := kilolock.ValidID("environment", req.EnvironmentID); err != nil {
			return nil, "", err
		}
	}
	tok, secret, err = NewToken(req.Kind)
	if err != nil {
		return nil, "", err
	}
	tok.Name, tok.EnvironmentID, tok.Scope, tok.UserID = req.Name, req.EnvironmentID, req.Scope, req.UserID
	if req.ExpiresIn < 0 {
		return nil, "", invalid("expires_in must be positive, or zero for a token that does not expire")
	}
	if req.ExpiresIn > MaxTokenLifetime {
		return nil, "", errLifetimeTooLong(req.ExpiresIn.String())
	}
	if req.ExpiresIn > 0 {
		tok.Expires = time.Now().Add(req.ExpiresIn)
	}
	if err := c.store.CreateToken(ctx, tok); err != nil {
		return nil, "", environmentNotFound(err, req.EnvironmentID)
	}
	return tok, secret, c.audit(ctx, by, "token.issue", tok.ID)
}

// Tokens lists the tokens of kind (every kind when empty) by id. Their
// secrets are not kept, so not listed.
func (c *Control) Tokens(ctx context.Context, kind TokenKind) ([]Token, error) {
	if kind != "" && kind.Prefix() == "" {
		return nil, &kilolock.InvalidError{Code: "invalid_token", Message: fmt.Sprintf("%s is not a kind of token", kilolock.Clip(string(kind))), Hint: "list kind automation, personal or operator, or every kind"}
	}
	return c.store.Tokens(ctx, kind)
}

// RevokeToken revokes a token and its grants at once. ErrNotFound when
// missing. Audited as token.revoke.
func (c *Control) RevokeToken(ctx context.Context, by kilolock.Caller, id string) error {
	if err := kilolock.ValidID("token", id); err != nil {
		return err
	}
	if err := c.store.DeleteToken(ctx, id); err != nil {
		return tokenNotFound(err, id)
	}
	return c.audit(ctx, by, "token.revoke", id)
}

// AddGrant gives personal access token tokenID access to environment
// envID; granting again changes nothing. ErrNotFound when either is
// missing. Audited as grant.add, on "TOKEN->ENV".
func (c *Control) AddGrant(ctx context.Context, by kilolock.Caller, tokenID, envID string) (*Grant, error) {
	if err := validGrant(tokenID, envID); err != nil {
		return nil, err
	}
	if _, err := c.store.Environment(ctx, envID); err != nil {
		return nil, environmentNotFound(err, envID)
	}
	g := &Grant{TokenID: tokenID, EnvironmentID: envID}
	if err := c.store.PutGrant(ctx, g); err != nil {
		if errors.Is(err, kilolock.ErrInvalid) {
			return nil, &kilolock.InvalidError{Code: "grant_needs_pat", Message: fmt.Sprintf("token %s is not a personal access token: only PATs take grants", tokenID),
				Hint: "an automation token reaches its own environment; issue a PAT (kl pat create USER) and grant that"}
		}
		return nil, tokenNotFound(err, tokenID)
	}
	return g, c.audit(ctx, by, "grant.add", tokenID+"->"+envID)
}

// RevokeGrant takes a grant away. ErrNotFound when there is none. Audited
// as grant.revoke, on "TOKEN->ENV".
func (c *Control) RevokeGrant(ctx context.Context, by kilolock.Caller, tokenID, envID string) error {
	if err := validGrant(tokenID, envID); err != nil {
		return err
	}
	if err := c.store.DeleteGrant(ctx, tokenID, envID); err != nil {
		return explain(err, kilolock.ErrNotFound, "grant_not_found", fmt.Sprintf("token %s has no grant to environment %s", tokenID, envID), "kl grant list "+tokenID+" shows its grants")
	}
	return c.audit(ctx, by, "grant.revoke", tokenID+"->"+envID)
}

// Grants lists a token's grants (every grant when tokenID is empty).
func (c *Control) Grants(ctx context.Context, tokenID string) ([]Grant, error) {
	if tokenID != "" {
		if err := kilolock.ValidID("token", tokenID); err != nil {
			return nil, err
		}
	}
	return c.store.Grants(ctx, tokenID)
}

// validGrant checks the two ids of a grant.
func validGrant(tokenID, envID string) error {
	if err := kilolock.ValidID("token", tokenID); err != nil {
		return err
	}
	return kilolock.ValidID("environment", envID)
}

// ArchiveState archives state of environment envID in workspace
// workspaceID: it refuses writes until restored. The state need not exist
// yet. ErrNotFound when the environment is missing or not the workspace's.
// Audited as state.archive, on the state's internal name
// (TenantStateName).
func (c *Control) ArchiveState(ctx context.Context, by kilolock.Caller, workspaceID, envID, state string) error {
	return c.setStateLifecycle(ctx, by, workspaceID, envID, state, LifecycleArchived, "state.archive")
}

// RestoreState restores an archived state, as ArchiveState names it.
// Refused with a *QuotaError (Restore set; 403 quota_exceeded) when the
// state's managed instances would grow its environment past a hard
// limit: the state stays archived. Audited as state.restore.
func (c *Control) RestoreState(ctx context.Context, by kilolock.Caller, workspaceID, envID, state string) error {
	return c.setStateLifecycle(ctx, by, workspaceID, envID, state, LifecycleActive, "state.restore")
}

func (c *Control) setStateLifecycle(ctx context.Context, by kilolock.Caller, workspaceID, envID, state string, l Lifecycle, action string) error {
	env, err := c.environmentOf(ctx, workspaceID, envID)
	if err != nil {
		return err
	}
	name, err := TenantStateName(env.WorkspaceID, env.PublicID, state)
	if err != nil {
		return err
	}
	if err := c.store.SetStateLifecycle(ctx, name, l); err != nil {
		return err
	}
	return c.audit(ctx, by, action, name)
}

func tokenNotFound(err error, id string) error {
	return explain(err, kilolock.ErrNotFound, "token_not_found", fmt.Sprintf("there is no token %q (never issued, or revoked)", id), "kl token list and kl pat list show the tokens")
}

// Audit lists the audit log, newest first, as f selects.
func (c *Control) Audit(ctx context.Context, f kilolock.AuditFilter) ([]kilolock.AuditEntry, error) {
	return c.store.Audit(ctx, f)
}

// Reach is what one token may use: each environment with the backend path
// of its states, and, for a PAT, the grants that give nothing and why. It
// is what `kl whoami` shows a token's holder, since the CLIs print only a
// status when a request is refused.
type Reach struct {
	Token        Token           `json:"token"`
	Expired      bool            `json:"expired,omitempty"`
	Environments []ReachableEnv  `json:"environments"`
	Unusable     []UnusableGrant `json:"unusable,omitempty"`
}

// ReachableEnv is an environment a token reaches.
type ReachableEnv struct {
	Environment
	// Path is the backend address of a state in it, with {state_name}
	// to fill in: its outputs-only address for an outputs-scoped token.
	Path string `json:"path"`
	// Writable is false for a read- or outputs-scoped token or a
	// suspended workspace.
	Writable bool `json:"writable"`
	// OutputsOnly is true for an outputs-scoped token: it reads states'
	// outputs and nothing else.
	OutputsOnly bool `json:"outputs_only,omitempty"`
}

// UnusableGrant is a PAT's grant that reaches nothing, and why.
type UnusableGrant struct {
	EnvironmentID string `json:"environment_id"`
	Reason        string `json:"reason"` // "membership_missing"
}

// Reach returns what the token whose secret hashes to h reaches, at now.
// ErrNotFound when no live token has that hash.
func (c *Control) Reach(ctx context.Context, h TokenHash, now time.Time) (*Reach, error) {
	tok, err := c.store.TokenByHash(ctx, h)
	if err != nil {
		return nil, err
	}
	r := &Reach{Token: *tok, Expired: tok.Expired(now), Environments: []ReachableEnv{}}
	outputsOnly := tok.Scope == ScopeOutputs
	add := func(env *Environment, writable bool) error {
		ws, err := c.store.Workspace(ctx, env.WorkspaceID)
		if err != nil {
			return err
		}
		re := ReachableEnv{Environment: *env, Path: "/v1/states/" + env.WorkspaceID + "/" + env.PublicID + "/{state_name}",
			Writable: writable && ws.Lifecycle == LifecycleActive, OutputsOnly: outputsOnly}
		if outputsOnly {
			re.Path += "/outputs"
		}
		r.Environments = append(r.Environments, re)
		return nil
	}
	switch tok.Kind {
	case TokenAutomation:
		env, err := c.store.Environment(ctx, tok.EnvironmentID)
		if err != nil {
			return nil, err
		}
		if err := add(env, tok.Scope == ScopeReadWrite); err != nil {
			return nil, err
		}
	case TokenPersonal:
		grants, err := c.store.Grants(ctx, tok.ID)
		if err != nil {
			return nil, err
		}
		for _, g := range grants {
			env, err := c.store.Environment(ctx, g.EnvironmentID)
			if err != nil {
				return nil, err
			}
			members, err := c.store.Members(ctx, env.WorkspaceID)
			if err != nil {
				return nil, err
			}
			member := false
			for _, m := range members {
				member = member || m.UserID == tok.UserID
			}
			if !member {
				r.Unusable = append(r.Unusable, UnusableGrant{EnvironmentID: g.EnvironmentID, Reason: "membership_missing"})
				continue
			}
			if err := add(env, true); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

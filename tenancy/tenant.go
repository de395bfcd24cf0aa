package tenancy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
)

// WorkspaceKind says who a workspace belongs to.
type WorkspaceKind string

// Kinds of workspaces.
const (
	WorkspacePersonal     WorkspaceKind = "personal"     // one owner
	WorkspaceOrganization WorkspaceKind = "organization" // members with roles
)

// Lifecycle is whether a workspace or a state takes writes. Reads are
// allowed in every lifecycle.
type Lifecycle string

// Lifecycles of workspaces and states.
const (
	LifecycleActive    Lifecycle = "active"
	LifecycleSuspended Lifecycle = "suspended" // a workspace refusing writes
	LifecycleArchived  Lifecycle = "archived"  // a state refusing writes
)

// Role is a member's role in a workspace.
type Role string

// Roles of members.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Workspace is a tenant: a person's or an organization's environments.
type Workspace struct {
	ID        string        `json:"id"` // "ws_…"
	Name      string        `json:"name"`
	Kind      WorkspaceKind `json:"kind"`
	Lifecycle Lifecycle     `json:"lifecycle"`
	Created   time.Time     `json:"created"`
}

// Environment belongs to a workspace and holds its states. Clients address
// it by PublicID; Slug is for people.
type Environment struct {
	PublicID    string    `json:"public_id"` // "env_…"
	Slug        string    `json:"slug"`
	WorkspaceID string    `json:"workspace_id"`
	Created     time.Time `json:"created"`
	// RequireClientEncryption makes every state of the environment take
	// only OpenTofu client-side encrypted writes (see
	// State.ClientEncryptionRequired): an operator's setting.
	RequireClientEncryption bool `json:"require_client_encryption"`
}

// Member is a user's membership of a workspace.
type Member struct {
	UserID string `json:"user_id"`
	Role   Role   `json:"role"`
}

// TokenKind says what a token is for; each kind has a prefix that secret
// scanners recognize.
type TokenKind string

// Kinds of tokens.
const (
	// TokenAutomation ("klt_") reaches one environment with one Scope.
	TokenAutomation TokenKind = "automation"
	// TokenPersonal ("klp_", a PAT) belongs to a user and reaches an
	// environment only through a Grant, while the user is a member of the
	// environment's workspace.
	TokenPersonal TokenKind = "personal"
	// TokenOperator ("klo_") is the bootstrap token of the control API.
	TokenOperator TokenKind = "operator"
)

// Prefix returns the prefix of the kind's secrets.
func (k TokenKind) Prefix() string {
	switch k {
	case TokenAutomation:
		return "klt_"
	case TokenPersonal:
		return "klp_"
	case TokenOperator:
		return "klo_"
	}
	return ""
}

// Scope is what an automation token may do.
type Scope string

// Scopes of automation tokens.
const (
	// ScopeRead reads states (and takes no lock, not even a plan's).
	ScopeRead Scope = "read"
	// ScopeReadWrite reads, locks and writes states.
	ScopeReadWrite Scope = "read-write"
	// ScopeOutputs reads only states' outputs, at their /outputs address:
	// what a terraform_remote_state of another configuration needs, and
	// none of the resources (which hold secrets).
	ScopeOutputs Scope = "outputs"
)

// Valid reports whether s is one of the scopes.
func (s Scope) Valid() bool { return s == ScopeRead || s == ScopeReadWrite || s == ScopeOutputs }

// TokenHash is the SHA-256 of a token secret: what a store keeps. Secrets
// are 256-bit random, so a fast hash is enough and no slow hash runs per
// request.
type TokenHash [sha256.Size]byte

// HashSecret returns the hash a store keeps for secret.
func HashSecret(secret string) TokenHash { return sha256.Sum256([]byte(secret)) }

// String returns the hash in hex, as stores keep it.
func (h TokenHash) String() string { return hex.EncodeToString(h[:]) }

// Equal compares two hashes in constant time.
func (h TokenHash) Equal(o TokenHash) bool { return subtle.ConstantTimeCompare(h[:], o[:]) == 1 }

// ParseTokenHash parses the hex form of a TokenHash.
func ParseTokenHash(s string) (TokenHash, error) {
	var h TokenHash
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("token hash %q: %w", s, kilolock.ErrInvalid)
	}
	copy(h[:], b)
	return h, nil
}

// Token is a stored credential of any kind. Its secret is never stored:
// only Hash. EnvironmentID and Scope are set for TokenAutomation, UserID for
// TokenPersonal.
type Token struct {
	ID            string    `json:"id"` // "tok_…"
	Kind          TokenKind `json:"kind"`
	Name          string    `json:"name,omitempty"`
	Hash          TokenHash `json:"-"`
	EnvironmentID string    `json:"environment_id,omitempty"`
	Scope         Scope     `json:"scope,omitempty"`
	UserID        string    `json:"user_id,omitempty"`
	Created       time.Time `json:"created"`
	LastUsed      time.Time `json:"last_used,omitzero"`
	// Expires is when the token stops working; zero means never.
	Expires time.Time `json:"expires,omitzero"`
}

// Expired reports whether t no longer works at now.
func (t *Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// NewToken returns a token of kind with a fresh ID and secret. The secret
// is shown once, to whoever asked for the token; t.Hash is what is kept.
func NewToken(kind TokenKind) (t *Token, secret string, err error) {
	if kind.Prefix() == "" {
		return nil, "", &kilolock.InvalidError{Code: "invalid_token_kind", Message: fmt.Sprintf("unknown token kind %q", kind), Hint: "use automation, personal or operator"}
	}
	secret = kind.Prefix() + randomHex(32)
	return &Token{ID: kilolock.NewID("tok_"), Kind: kind, Hash: HashSecret(secret)}, secret, nil
}

// Grant gives a personal access token access to one environment.
type Grant struct {
	TokenID       string    `json:"token_id"`
	EnvironmentID string    `json:"environment_id"`
	Created       time.Time `json:"created"`
}

// TenantStateName is the name under which the Engine keeps the state
// stateName of environment envID in workspace wsID. It is the only place
// tenant names are built. A name in the local lane that has this form is
// refused (LocalStateName), so the lanes never share a state.
func TenantStateName(wsID, envID, stateName string) (string, error) {
	name := wsID + "." + envID + "." + stateName
	if !strings.HasPrefix(wsID, "ws_") || !strings.HasPrefix(envID, "env_") || strings.Contains(wsID+envID, ".") {
		return "", &kilolock.InvalidError{Code: "invalid_scope", Message: fmt.Sprintf("%q/%q is not a workspace and environment id", wsID, envID), Hint: "use /v1/states/ws_…/env_…/NAME"}
	}
	if err := kilolock.ValidStateName(stateName); err != nil {
		return "", err
	}
	if err := kilolock.ValidStateName(name); err != nil {
		return "", &kilolock.InvalidError{Code: "invalid_state_name", Message: fmt.Sprintf("state name %q is too long", stateName), Hint: fmt.Sprintf("use at most %d characters", 128-len(wsID)-len(envID)-2)}
	}
	return name, nil
}

// SplitTenantStateName splits a tenant's internal state name
// (TenantStateName) into its workspace id, environment public id and
// state name: the text up to the first '.', up to the second, and the
// rest. ok is false for a name that does not start with "ws_" or has no
// second '.': a state of the local lane. The stores find an environment's
// states by the same rule (their states.environment_id column).
func SplitTenantStateName(name string) (wsID, envID, state string, ok bool) {
	if !strings.HasPrefix(name, "ws_") {
		return "", "", "", false
	}
	wsID, rest, ok1 := strings.Cut(name, ".")
	envID, state, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return "", "", "", false
	}
	return wsID, envID, state, true
}

// LocalStateName checks a name of the local lane: a valid state name that
// cannot be taken for a tenant's internal name.
func LocalStateName(name string) error {
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, "ws_") {
		return &kilolock.InvalidError{Code: "invalid_state_name", Message: fmt.Sprintf("%q: names starting with ws_ are reserved for workspaces", name), Hint: "pick a name that does not start with ws_"}
	}
	return nil
}

// AccessRequest is what a request of the authenticated lane names: the
// hash of its secret and the three segments of its path.
type AccessRequest struct {
	Hash        TokenHash
	WorkspaceID string // the path's workspace id
	Environment string // the path's environment segment: a public id, or mistakenly a slug
	StateName   string // the internal name of the state the path names (TenantStateName)
}

// Access is everything the authenticated lane decides a request on, read
// by a store in one statement so that authorizing costs one round trip and
// sees one snapshot: a revoked token, a removed member or a new hold counts
// from the very next request.
type Access struct {
	// Token is the credential, nil when no token has the hash (never
	// issued, or revoked).
	Token *Token
	// Workspace is the path's workspace, nil when there is none by that id.
	Workspace *Workspace
	// Environment is the environment of the path's workspace whose public
	// id, or else whose slug, is the path's environment segment; nil when
	// neither matches.
	Environment *Environment
	// Home is an automation token's own environment.
	Home *Environment
	// Member says a personal token's user is a member of Workspace.
	Member bool
	// Granted says a personal token holds a grant to Environment.
	Granted bool
	// State is the lifecycle of the named state (LifecycleActive when no
	// hold was set).
	State Lifecycle
}

// TenantStore is the optional capability of a Store that keeps workspaces,
// environments, members, tokens, grants, state lifecycles and the audit
// log. Find it with a type assertion: s.(TenantStore).
//
// Every method returns ErrNotFound (wrapped) for a missing workspace,
// environment, token or state hold, and ErrConflict for something already
// there (a duplicate id, slug or token hash).
type TenantStore interface {
	// CreateWorkspace stores w; its ID, Name and Kind are set by the caller.
	// Lifecycle and Created are set by the store (active, now).
	CreateWorkspace(ctx context.Context, w *Workspace) error
	// Workspace returns one workspace. ErrNotFound when missing.
	Workspace(ctx context.Context, id string) (*Workspace, error)
	// Workspaces lists every workspace by id.
	Workspaces(ctx context.Context) ([]Workspace, error)
	// SetWorkspaceLifecycle suspends or resumes a workspace. ErrNotFound
	// when missing.
	SetWorkspaceLifecycle(ctx context.Context, id string, l Lifecycle) error

	// CreateEnvironment stores e (Created set by the store). ErrNotFound
	// when its workspace is missing; ErrConflict for a slug taken in the
	// workspace.
	CreateEnvironment(ctx context.Context, e *Environment) error
	// Environment returns one environment by public id. ErrNotFound when
	// missing.
	Environment(ctx context.Context, publicID string) (*Environment, error)
	// Environments lists a workspace's environments by slug (empty when it
	// has none or is missing).
	Environments(ctx context.Context, workspaceID string) ([]Environment, error)
	// SetEnvironmentRequireClientEncryption sets
	// Environment.RequireClientEncryption. ErrNotFound when the
	// environment is missing.
	SetEnvironmentRequireClientEncryption(ctx context.Context, publicID string, require bool) error

	// PutMember adds a member, or changes its role. ErrNotFound when the
	// workspace is missing.
	PutMember(ctx context.Context, workspaceID string, m Member) error
	// RemoveMember removes a member. ErrNotFound when not a member.
	RemoveMember(ctx context.Context, workspaceID, userID string) error
	// Members lists a workspace's members by user id.
	Members(ctx context.Context, workspaceID string) ([]Member, error)

	// CreateToken stores t (Created set by the store). ErrNotFound when an
	// automation token's environment is missing.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash finds a token by the hash of its secret. ErrNotFound when
	// no token has it (never issued, or revoked).
	TokenByHash(ctx context.Context, h TokenHash) (*Token, error)
	// Tokens lists tokens of kind (every kind when empty) by id.
	Tokens(ctx context.Context, kind TokenKind) ([]Token, error)
	// DeleteToken revokes a token and its grants at once. ErrNotFound when
	// missing.
	DeleteToken(ctx context.Context, id string) error
	// Access reads, in one statement, what the authenticated lane decides
	// req on. An unknown hash is no error: Access.Token is nil.
	Access(ctx context.Context, req AccessRequest) (*Access, error)
	// TouchToken sets a token's last-used time. A missing token is not an
	// error (it may have been revoked meanwhile).
	TouchToken(ctx context.Context, id string, at time.Time) error

	// PutGrant gives a personal token access to an environment; granting
	// again changes nothing. ErrNotFound when either is missing.
	PutGrant(ctx context.Context, g *Grant) error
	// DeleteGrant revokes a grant. ErrNotFound when missing.
	DeleteGrant(ctx context.Context, tokenID, environmentID string) error
	// Grants lists a token's grants (every grant when tokenID is empty).
	Grants(ctx context.Context, tokenID string) ([]Grant, error)

	// SetStateLifecycle archives or restores the state of that (internal)
	// name. A state need not exist yet. A store that keeps quotas
	// (QuotaStore) refuses to restore an archived state whose managed
	// instances would grow its environment past a hard limit: a
	// *QuotaError (Restore set), the state left archived.
	SetStateLifecycle(ctx context.Context, name string, l Lifecycle) error
	// StateLifecycle returns a state's lifecycle: LifecycleActive when none
	// was set.
	StateLifecycle(ctx context.Context, name string) (Lifecycle, error)

	// AppendAudit stores e, setting its ID (and At when zero).
	AppendAudit(ctx context.Context, e *kilolock.AuditEntry) error
	// Audit lists entries newest first.
	Audit(ctx context.Context, f kilolock.AuditFilter) ([]kilolock.AuditEntry, error)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics if the OS cannot supply)
	return hex.EncodeToString(b)
}

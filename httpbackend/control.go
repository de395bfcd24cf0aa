package httpbackend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kilolock/kilolock"
)

// controlFunc is a route of the control API: it changes (or reads) the
// tenancy records and returns what to answer and, for a change, the target
// to audit ("" for a read).
type controlFunc func(r *http.Request, ts kilolock.TenantStore) (status int, result any, target string, err error)

// controlRoutes registers the control API: workspaces, environments,
// members, tokens, PATs, grants, lifecycles and the audit log. In AuthToken
// mode only the operator token reaches it. Every change is audited.
func (h *Handler) controlRoutes() {
	const ws = "/v1/api/workspaces/{ws}"
	h.control("POST /v1/api/workspaces", "workspace.create", h.createWorkspace)
	h.control("GET /v1/api/workspaces", "", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		out, err := ts.Workspaces(r.Context())
		return http.StatusOK, out, "", err
	})
	h.control("POST "+ws+"/suspend", "workspace.suspend", lifecycle(kilolock.LifecycleSuspended))
	h.control("POST "+ws+"/resume", "workspace.resume", lifecycle(kilolock.LifecycleActive))
	h.control("POST "+ws+"/environments", "environment.create", h.createEnvironment)
	h.control("GET "+ws+"/environments", "", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		if _, err := ts.Workspace(r.Context(), r.PathValue("ws")); err != nil {
			return 0, nil, "", err
		}
		out, err := ts.Environments(r.Context(), r.PathValue("ws"))
		return http.StatusOK, out, "", err
	})
	h.control("PUT "+ws+"/members/{user}", "member.add", h.putMember)
	h.control("DELETE "+ws+"/members/{user}", "member.remove", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		err := ts.RemoveMember(r.Context(), r.PathValue("ws"), r.PathValue("user"))
		return http.StatusOK, map[string]string{"removed": r.PathValue("user")}, r.PathValue("ws") + "/" + r.PathValue("user"), err
	})
	h.control("GET "+ws+"/members", "", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		out, err := ts.Members(r.Context(), r.PathValue("ws"))
		return http.StatusOK, out, "", err
	})
	h.control("POST "+ws+"/environments/{env}/states/{state}/archive", "state.archive", stateLifecycle(kilolock.LifecycleArchived))
	h.control("POST "+ws+"/environments/{env}/states/{state}/restore", "state.restore", stateLifecycle(kilolock.LifecycleActive))
	h.control("POST /v1/api/tokens", "token.issue", h.issueToken)
	h.control("GET /v1/api/tokens", "", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		out, err := ts.Tokens(r.Context(), kilolock.TokenKind(r.URL.Query().Get("kind")))
		return http.StatusOK, out, "", err
	})
	h.control("DELETE /v1/api/tokens/{id}", "token.revoke", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		err := ts.DeleteToken(r.Context(), r.PathValue("id"))
		return http.StatusOK, map[string]string{"revoked": r.PathValue("id")}, r.PathValue("id"), err
	})
	h.control("PUT /v1/api/tokens/{id}/grants/{env}", "grant.add", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		g := &kilolock.Grant{TokenID: r.PathValue("id"), EnvironmentID: r.PathValue("env")}
		err := ts.PutGrant(r.Context(), g)
		return http.StatusOK, g, g.TokenID + "->" + g.EnvironmentID, err
	})
	h.control("DELETE /v1/api/tokens/{id}/grants/{env}", "grant.revoke", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		err := ts.DeleteGrant(r.Context(), r.PathValue("id"), r.PathValue("env"))
		return http.StatusOK, map[string]string{"revoked": r.PathValue("id") + "->" + r.PathValue("env")}, r.PathValue("id") + "->" + r.PathValue("env"), err
	})
	h.control("GET /v1/api/tokens/{id}/grants", "", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		out, err := ts.Grants(r.Context(), r.PathValue("id"))
		return http.StatusOK, out, "", err
	})
	h.control("GET /v1/api/audit", "", func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		out, err := ts.Audit(r.Context(), kilolock.AuditFilter{DeniedOnly: r.URL.Query().Get("denied") == "true", Limit: limit})
		return http.StatusOK, out, "", err
	})
}

// control registers a control route; action names its audit entries (a
// read has none).
func (h *Handler) control(pattern, action string, fn controlFunc) {
	h.api(pattern, func(w http.ResponseWriter, r *http.Request) error {
		ts, ok := h.engine.Store().(kilolock.TenantStore)
		if !ok {
			return &httpError{status: http.StatusNotImplemented, code: "tenancy_unsupported", message: "the store keeps no workspaces", hint: "use the SQLite or PostgreSQL store"}
		}
		status, result, target, err := fn(r, ts)
		if err != nil {
			return err
		}
		if action != "" {
			ri := info(r)
			actor := ri.actor
			if actor == "" {
				actor = "anonymous"
			}
			e := &kilolock.AuditEntry{Actor: actor, Action: action, Target: target, From: r.RemoteAddr, RequestID: ri.id}
			if err := ts.AppendAudit(context.WithoutCancel(r.Context()), e); err != nil {
				return fmt.Errorf("audit %s: %w", action, err)
			}
		}
		writeJSON(w, status, result)
		return nil
	})
}

// controlRequest decodes a control request body.
func (h *Handler) controlRequest(r *http.Request, v any) error {
	body, err := h.readBody(nil, r, lockBodyLimit)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}

func (h *Handler) createWorkspace(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
	var req struct {
		Name  string                 `json:"name"`
		Kind  kilolock.WorkspaceKind `json:"kind"`
		Owner string                 `json:"owner"`
	}
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, "", err
	}
	if req.Kind == "" {
		req.Kind = kilolock.WorkspaceOrganization
	}
	if req.Name == "" || (req.Kind != kilolock.WorkspacePersonal && req.Kind != kilolock.WorkspaceOrganization) {
		return 0, nil, "", &kilolock.InvalidError{Code: "invalid_workspace", Message: "a workspace needs a name and a kind of personal or organization", Hint: `send {"name": "acme", "kind": "organization", "owner": "alice"}`}
	}
	ws := &kilolock.Workspace{ID: kilolock.NewID("ws_"), Name: req.Name, Kind: req.Kind}
	if err := ts.CreateWorkspace(r.Context(), ws); err != nil {
		return 0, nil, "", err
	}
	if req.Owner != "" {
		if err := ts.PutMember(r.Context(), ws.ID, kilolock.Member{UserID: req.Owner, Role: kilolock.RoleOwner}); err != nil {
			return 0, nil, "", err
		}
	}
	return http.StatusCreated, ws, ws.ID, nil
}

func lifecycle(l kilolock.Lifecycle) controlFunc {
	return func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		id := r.PathValue("ws")
		if err := ts.SetWorkspaceLifecycle(r.Context(), id, l); err != nil {
			return 0, nil, "", err
		}
		ws, err := ts.Workspace(r.Context(), id)
		return http.StatusOK, ws, id, err
	}
}

func stateLifecycle(l kilolock.Lifecycle) controlFunc {
	return func(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
		env, err := ts.Environment(r.Context(), r.PathValue("env"))
		if err != nil {
			return 0, nil, "", err
		}
		if env.WorkspaceID != r.PathValue("ws") {
			return 0, nil, "", fmt.Errorf("environment %q in workspace %q: %w", env.PublicID, r.PathValue("ws"), kilolock.ErrNotFound)
		}
		name, err := kilolock.TenantStateName(env.WorkspaceID, env.PublicID, r.PathValue("state"))
		if err != nil {
			return 0, nil, "", err
		}
		if err := ts.SetStateLifecycle(r.Context(), name, l); err != nil {
			return 0, nil, "", err
		}
		return http.StatusOK, map[string]string{"state": r.PathValue("state"), "lifecycle": string(l)}, name, nil
	}
}

func (h *Handler) createEnvironment(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
	var req struct {
		Slug string `json:"slug"`
	}
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, "", err
	}
	if kilolock.ValidStateName(req.Slug) != nil {
		return 0, nil, "", &kilolock.InvalidError{Code: "invalid_slug", Message: fmt.Sprintf("%q is not a valid environment slug", req.Slug), Hint: "use letters, digits, '.', '-' or '_'"}
	}
	e := &kilolock.Environment{PublicID: kilolock.NewID("env_"), Slug: req.Slug, WorkspaceID: r.PathValue("ws")}
	if err := ts.CreateEnvironment(r.Context(), e); err != nil {
		return 0, nil, "", err
	}
	return http.StatusCreated, e, e.PublicID, nil
}

func (h *Handler) putMember(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
	var req struct {
		Role kilolock.Role `json:"role"`
	}
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, "", err
	}
	switch req.Role {
	case "":
		req.Role = kilolock.RoleMember
	case kilolock.RoleOwner, kilolock.RoleAdmin, kilolock.RoleMember:
	default:
		return 0, nil, "", &kilolock.InvalidError{Code: "invalid_role", Message: fmt.Sprintf("unknown role %q", req.Role), Hint: "use owner, admin or member"}
	}
	m := kilolock.Member{UserID: r.PathValue("user"), Role: req.Role}
	if err := ts.PutMember(r.Context(), r.PathValue("ws"), m); err != nil {
		return 0, nil, "", err
	}
	return http.StatusOK, m, r.PathValue("ws") + "/" + m.UserID, nil
}

// issuedToken is a token with its secret: the only time the secret is shown.
type issuedToken struct {
	*kilolock.Token
	Secret string `json:"secret"`
}

// issueToken issues an automation token (environment_id, scope) or a PAT
// (user_id).
func (h *Handler) issueToken(r *http.Request, ts kilolock.TenantStore) (int, any, string, error) {
	var req struct {
		Kind          kilolock.TokenKind `json:"kind"`
		Name          string             `json:"name"`
		EnvironmentID string             `json:"environment_id"`
		Scope         kilolock.Scope     `json:"scope"`
		UserID        string             `json:"user_id"`
	}
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, "", err
	}
	invalid := func(msg string) error {
		return &kilolock.InvalidError{Code: "invalid_token", Message: msg, Hint: `send {"kind": "automation", "environment_id": "env_…", "scope": "read-write"} or {"kind": "personal", "user_id": "alice"}`}
	}
	switch req.Kind {
	case kilolock.TokenAutomation:
		if req.Scope == "" {
			req.Scope = kilolock.ScopeReadWrite
		}
		if req.EnvironmentID == "" || req.UserID != "" || (req.Scope != kilolock.ScopeRead && req.Scope != kilolock.ScopeReadWrite) {
			return 0, nil, "", invalid("an automation token needs an environment_id and a scope of read or read-write")
		}
	case kilolock.TokenPersonal:
		if req.UserID == "" || req.EnvironmentID != "" || req.Scope != "" {
			return 0, nil, "", invalid("a personal access token needs a user_id; its access comes from grants")
		}
	default:
		return 0, nil, "", invalid(fmt.Sprintf("kind %q: want automation or personal", req.Kind))
	}
	tok, secret, err := kilolock.NewToken(req.Kind)
	if err != nil {
		return 0, nil, "", err
	}
	tok.Name, tok.EnvironmentID, tok.Scope, tok.UserID = req.Name, req.EnvironmentID, req.Scope, req.UserID
	if err := ts.CreateToken(r.Context(), tok); err != nil {
		if errors.Is(err, kilolock.ErrNotFound) {
			return 0, nil, "", fmt.Errorf("environment %q: %w", req.EnvironmentID, kilolock.ErrNotFound)
		}
		return 0, nil, "", err
	}
	return http.StatusCreated, issuedToken{Token: tok, Secret: secret}, tok.ID, nil
}

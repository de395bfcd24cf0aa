package httpbackend

import (
	"context"
	"net/http"
	"strconv"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/tenancy"
)

// controlFunc is a route of the control API: it decodes the request, calls
// tenancy.Control on behalf of by, and returns what to answer. Control
// validates and audits.
type controlFunc func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (status int, result any, err error)

// controlRoutes registers the control API: workspaces, environments,
// members, tokens, PATs, grants, lifecycles and the audit log, each a thin
// layer over tenancy.Control. In AuthToken mode only the operator token
// reaches it.
func (h *Handler) controlRoutes() {
	const ws = "/v1/api/workspaces/{ws}"
	h.control("POST /v1/api/workspaces", h.createWorkspace)
	h.control("GET /v1/api/workspaces", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Workspaces(r.Context())
		return http.StatusOK, out, err
	})
	h.control("POST "+ws+"/suspend", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		out, err := c.SuspendWorkspace(r.Context(), by, r.PathValue("ws"))
		return http.StatusOK, out, err
	})
	h.control("POST "+ws+"/resume", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		out, err := c.ResumeWorkspace(r.Context(), by, r.PathValue("ws"))
		return http.StatusOK, out, err
	})
	h.control("POST "+ws+"/environments", h.createEnvironment)
	h.control("GET "+ws+"/environments", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Environments(r.Context(), r.PathValue("ws"))
		return http.StatusOK, out, err
	})
	h.control("PATCH "+ws+"/environments/{env}", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		var cfg tenancy.EnvironmentConfig
		if err := h.controlRequest(r, &cfg); err != nil {
			return 0, nil, err
		}
		out, err := c.ConfigureEnvironment(r.Context(), by, r.PathValue("ws"), r.PathValue("env"), cfg)
		return http.StatusOK, out, err
	})
	h.control("PUT "+ws+"/members/{user}", h.putMember)
	h.control("DELETE "+ws+"/members/{user}", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		err := c.RemoveMember(r.Context(), by, r.PathValue("ws"), r.PathValue("user"))
		return http.StatusOK, client.Removed{Removed: r.PathValue("user")}, err
	})
	h.control("GET "+ws+"/members", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Members(r.Context(), r.PathValue("ws"))
		return http.StatusOK, out, err
	})
	h.control("POST "+ws+"/environments/{env}/states/{state}/archive", stateLifecycle(tenancy.LifecycleArchived, (*tenancy.Control).ArchiveState))
	h.control("POST "+ws+"/environments/{env}/states/{state}/restore", stateLifecycle(tenancy.LifecycleActive, (*tenancy.Control).RestoreState))
	h.control("POST /v1/api/tokens", h.issueToken)
	h.control("GET /v1/api/tokens", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Tokens(r.Context(), tenancy.TokenKind(r.URL.Query().Get("kind")))
		return http.StatusOK, out, err
	})
	h.control("DELETE /v1/api/tokens/{id}", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		err := c.RevokeToken(r.Context(), by, r.PathValue("id"))
		return http.StatusOK, client.Revoked{Revoked: r.PathValue("id")}, err
	})
	h.control("PUT /v1/api/tokens/{id}/grants/{env}", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		out, err := c.AddGrant(r.Context(), by, r.PathValue("id"), r.PathValue("env"))
		return http.StatusOK, out, err
	})
	h.control("DELETE /v1/api/tokens/{id}/grants/{env}", func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		err := c.RevokeGrant(r.Context(), by, r.PathValue("id"), r.PathValue("env"))
		return http.StatusOK, client.Revoked{Revoked: r.PathValue("id") + "->" + r.PathValue("env")}, err
	})
	h.control("GET /v1/api/tokens/{id}/grants", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Grants(r.Context(), r.PathValue("id"))
		return http.StatusOK, out, err
	})
	h.control("GET /v1/api/audit", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		out, err := c.Audit(r.Context(), kilolock.AuditFilter{DeniedOnly: r.URL.Query().Get("denied") == "true", Limit: limit})
		return http.StatusOK, out, err
	})
}

// control registers a control route. The caller of a change is the
// request's actor ("anonymous" when none), from its remote address.
func (h *Handler) control(pattern string, fn controlFunc) {
	h.api(pattern, func(w http.ResponseWriter, r *http.Request) error {
		ts, ok := h.engine.Store().(tenancy.TenantStore)
		if !ok {
			return &httpError{status: http.StatusNotImplemented, code: "tenancy_unsupported", message: "the store keeps no workspaces", hint: "use the SQLite or PostgreSQL store"}
		}
		ri := info(r)
		by := kilolock.Caller{Actor: ri.actor, From: r.RemoteAddr, RequestID: ri.id} // Control records "" as anonymous
		status, result, err := fn(r, tenancy.NewControl(ts), by)
		if err != nil {
			return err
		}
		writeJSON(w, status, result)
		return nil
	})
}

// controlRequest decodes a control request body.
func (h *Handler) controlRequest(r *http.Request, v any) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	return decodeJSON(body, v)
}

func (h *Handler) createWorkspace(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
	var req client.WorkspaceRequest
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, err
	}
	ws, err := c.CreateWorkspace(r.Context(), by, req.Name, req.Kind, req.Owner)
	return http.StatusCreated, ws, err
}

// stateLifecycle answers an archive or restore of a tenant's state.
func stateLifecycle(l tenancy.Lifecycle, set func(*tenancy.Control, context.Context, kilolock.Caller, string, string, string) error) controlFunc {
	return func(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
		err := set(c, r.Context(), by, r.PathValue("ws"), r.PathValue("env"), r.PathValue("state"))
		return http.StatusOK, client.LifecycleAnswer{State: r.PathValue("state"), Lifecycle: l}, err
	}
}

func (h *Handler) createEnvironment(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
	var req client.EnvironmentRequest
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, err
	}
	e, err := c.CreateEnvironment(r.Context(), by, r.PathValue("ws"), req.Slug)
	return http.StatusCreated, e, err
}

func (h *Handler) putMember(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
	var req client.MemberRequest
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, err
	}
	m, err := c.PutMember(r.Context(), by, r.PathValue("ws"), r.PathValue("user"), req.Role)
	return http.StatusOK, m, err
}

type issuedToken = client.IssuedToken

// issueToken issues an automation token (environment_id, scope) or a PAT
// (user_id), expiring after expires_in when given.
func (h *Handler) issueToken(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
	var req client.TokenRequest
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, err
	}
	expiresIn, err := tenancy.ParseExpiry(req.ExpiresIn)
	if err != nil {
		return 0, nil, err
	}
	tok, secret, err := c.IssueToken(r.Context(), by, tenancy.TokenRequest{Kind: req.Kind, Name: req.Name,
		EnvironmentID: req.EnvironmentID, Scope: req.Scope, UserID: req.UserID, ExpiresIn: expiresIn})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, issuedToken{Token: tok, Secret: secret}, nil
}

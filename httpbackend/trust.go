package httpbackend

import (
	"errors"
	"net/http"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// trustRoutes registers the control API of trust policies (workload
// identity), a thin layer over trust.Control, which validates and audits.
// In AuthToken mode only the operator token reaches it, as every route
// under /v1/api/.
//
//	POST   /v1/api/trust-policies        a trust.Policy (id, created set by the server) -> 201 the policy
//	GET    /v1/api/trust-policies[?environment=env_…]  -> the policies, by id
//	DELETE /v1/api/trust-policies/{id}   -> {"removed": id}
func (h *Handler) trustRoutes() {
	h.trustControl("POST /v1/api/trust-policies", func(r *http.Request, c *trust.Control, by kilolock.Caller) (int, any, error) {
		var p trust.Policy
		if err := h.controlRequest(r, &p); err != nil {
			// A max_ttl that is no duration says so itself, with its
			// code, rather than as malformed JSON.
			var invalid *kilolock.InvalidError
			if errors.As(err, &invalid) && invalid.Code == "malformed_json" && strings.Contains(invalid.Message, "max TTL") {
				return 0, nil, &kilolock.InvalidError{Code: "invalid_max_ttl", Message: strings.TrimPrefix(invalid.Message, "the body is not valid JSON: "), Hint: "e.g. \"max_ttl\": \"1h\" (at most 24h)"}
			}
			return 0, nil, err
		}
		if p.ID != "" || !p.Created.IsZero() {
			return 0, nil, &kilolock.InvalidError{Code: "invalid_trust_policy", Message: "a new trust policy's id and created time are the server's to set",
				Hint: "send the policy without id and created"}
		}
		out, err := c.Add(r.Context(), by, p)
		return http.StatusCreated, out, err
	})
	h.trustControl("GET /v1/api/trust-policies", func(r *http.Request, c *trust.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Policies(r.Context(), r.URL.Query().Get("environment"))
		return http.StatusOK, out, err
	})
	h.trustControl("DELETE /v1/api/trust-policies/{id}", func(r *http.Request, c *trust.Control, by kilolock.Caller) (int, any, error) {
		err := c.Remove(r.Context(), by, r.PathValue("id"))
		return http.StatusOK, client.Removed{Removed: r.PathValue("id")}, err
	})
}

// trustControl registers a route of trust policies, as control does the
// tenancy routes.
func (h *Handler) trustControl(pattern string, fn func(*http.Request, *trust.Control, kilolock.Caller) (int, any, error)) {
	h.api(pattern, func(w http.ResponseWriter, r *http.Request) error {
		c, err := trust.NewControl(h.engine.Store())
		if errors.Is(err, trust.ErrUnsupported) {
			return &httpError{status: http.StatusNotImplemented, code: "tenancy_unsupported", message: "the store keeps no trust policies", hint: "use the SQLite or PostgreSQL store"}
		}
		ri := info(r)
		status, result, err := fn(r, c, kilolock.Caller{Actor: ri.actor, From: r.RemoteAddr, RequestID: ri.id})
		if err != nil {
			return err
		}
		writeJSON(w, status, result)
		return nil
	})
}

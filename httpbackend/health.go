package httpbackend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// readyTimeout bounds the store ping of /readyz.
const readyTimeout = 2 * time.Second

// healthz answers 200 while the process serves.
func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, client.Status{Status: "ok"})
	return nil
}

// readyz answers 200 when the database answers, else 503 with Retry-After,
// so a load balancer sends no traffic to a replica that cannot serve it.
func (h *Handler) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := h.ready(ctx); err != nil {
		if !errors.Is(err, kilolock.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", kilolock.ErrUnavailable, err)
		}
		return err
	}
	writeJSON(w, http.StatusOK, client.Status{Status: "ready"})
	return nil
}

// versionz answers the server's version.
func (h *Handler) versionz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, &h.version)
	return nil
}

// probeMethods are the methods tried to build the Allow header of a 405.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, "LOCK", "UNLOCK"}

// fallback answers every request no route takes: 405 with an Allow header
// when the path exists for other methods, 400 for a path that cannot name a
// state, else 404 with a hint.
func (h *Handler) fallback(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range probeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		h.writeError(w, r, &httpError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
			message: fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path),
			hint:    "use one of: " + strings.Join(allow, ", "), allow: allow})
		return
	}
	for _, prefix := range []string{"/v1/states/", "/v1/state-unlock/"} {
		if rest, ok := strings.CutPrefix(r.URL.Path, prefix); ok {
			h.writeError(w, r, invalidName(rest)) // e.g. /v1/states/a/b
			return
		}
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/api/states/"); ok {
		if name, _, _ := strings.Cut(rest, "/"); kilolock.ValidStateName(name) != nil {
			h.writeError(w, r, invalidName(name))
			return
		}
	}
	h.writeError(w, r, &httpError{status: http.StatusNotFound, code: "not_found",
		message: fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path),
		hint:    "the Terraform backend address is /v1/states/NAME; the JSON API is under /v1/api/ (e.g. GET /v1/api/states)"})
}

package httpbackend

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/webui"
	"github.com/kilolock/kilolock/tenancy"
)

// uiRoutes mounts the read-only web view at /ui/: in AuthToken mode it
// sees what the authenticated lane lets a token read, decided by decide.
func (h *Handler) uiRoutes() {
	if h.ui != nil { // the in-process operator's mux: the same pages
		h.ui.Routes(h.mux.HandleFunc)
		return
	}
	o := webui.Options{Describe: h.describe, Extras: webui.Extras{
		DriftCounts: func(ctx context.Context, names []string) (map[string]int, error) {
			return drift.DriftCounts(ctx, h.engine, names)
		},
		Tags: func(ctx context.Context, name string) (map[int64][]string, error) {
			return history.TagsByVersion(ctx, h.engine, name)
		},
		Drift: func(ctx context.Context, name string) ([]drift.DriftRecord, error) {
			return drift.Drift(ctx, h.engine, name)
		},
	}, PublicURL: h.publicURL}
	if h.auth == AuthToken {
		o.Gate = uiGate{h}
	}
	h.ui = webui.New(h.engine, o)
	h.ui.Routes(h.mux.HandleFunc)
}

// describe is the one error mapping (classify) as the web view shows it;
// an error that is the server's fault is logged with the request id.
func (h *Handler) describe(r *http.Request, err error) webui.Problem {
	a := classify(err)
	ri := info(r)
	ri.errCode = a.body.Error
	if a.internal {
		h.log.Error("request failed", "request_id", ri.id, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	return webui.Problem{Status: a.status, Code: a.body.Error, Message: a.body.Message, Hint: a.body.Hint}
}

// uiGate is the authenticated lane's decision for the web view: a page
// reads a state exactly when a GET of it on /v1/states/… would be allowed
// with the same token, and every denial is logged and audited as the
// lane's are.
type uiGate struct{ h *Handler }

var _ webui.Gate = uiGate{}

// Viewer lists the environments secret reaches (tenancy.Reach), each
// confirmed by the lane's decision on a read of it.
func (g uiGate) Viewer(r *http.Request, secret string) (*webui.Viewer, error) {
	ts, err := g.h.tenantStore()
	if err != nil {
		return nil, err
	}
	reach, err := tenancy.NewControl(ts).Reach(r.Context(), tenancy.HashSecret(secret), time.Now())
	if errors.Is(err, kilolock.ErrNotFound) {
		err = denial(http.StatusUnauthorized, "credentials_invalid", "the token is unknown or revoked (the operator token reaches the control API, not states)",
			"paste an automation token (klt_…) or a personal access token (klp_…); ask for a new one with kl token issue or kl pat create")
		g.h.recordDenial(r, err)
		return nil, err
	} else if err != nil {
		return nil, err
	}
	info(r).actor = tokenActor(&reach.Token)
	v := &webui.Viewer{Actor: tokenActor(&reach.Token)}
	for _, env := range reach.Environments {
		err := g.decideRead(r, secret, env.WorkspaceID, env.PublicID, "")
		var he *httpError
		switch {
		case err == nil:
			v.Environments = append(v.Environments, webui.Scope{WorkspaceID: env.WorkspaceID, PublicID: env.PublicID, Slug: env.Slug})
		case errors.As(err, &he) && he.status == http.StatusUnauthorized:
			return nil, err // expired: nothing is reachable
		case errors.As(err, &he):
			// Reach listed it, the lane refuses it: the lane wins.
		default:
			return nil, err
		}
	}
	return v, nil
}

// Read decides a read of the state kept under the internal name.
func (g uiGate) Read(r *http.Request, secret, name string) error {
	ws, rest, _ := strings.Cut(name, ".")
	env, state, _ := strings.Cut(rest, ".")
	if internal, err := tenancy.TenantStateName(ws, env, state); err != nil || internal != name {
		return &httpError{status: http.StatusNotFound, code: "not_found", message: "no state " + name + " is visible here",
			hint: "this server serves tenants' states only: pick one from " + webui.Prefix}
	}
	return g.decideRead(r, secret, ws, env, name)
}

// decideRead is the lane's decision (decide) on a GET of a state of
// environment envID in workspace wsID; a denial is recorded.
func (g uiGate) decideRead(r *http.Request, secret, wsID, envID, name string) error {
	ts, err := g.h.tenantStore()
	if err != nil {
		return err
	}
	a, err := ts.Access(r.Context(), tenancy.AccessRequest{Hash: tenancy.HashSecret(secret), WorkspaceID: wsID, Environment: envID, StateName: name})
	if err != nil {
		return err
	}
	if a.Token != nil {
		info(r).actor = tokenActor(a.Token)
	}
	if err := decide(a, "", wsID, envID, accessRead, time.Now()); err != nil {
		g.h.recordDenial(r, err)
		return err
	}
	return nil
}

// tenantStore is the engine's store as a TenantStore, which AuthToken
// mode requires.
func (h *Handler) tenantStore() (tenancy.TenantStore, error) {
	ts, ok := h.engine.Store().(tenancy.TenantStore)
	if !ok {
		return nil, errors.New("auth: the store does not keep workspaces (tenancy.TenantStore)")
	}
	return ts, nil
}

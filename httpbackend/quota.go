package httpbackend

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// quotaRoutes registers the quota routes. GET …/quota is beside the state
// on both lanes (the authenticated lane rewrites
// /v1/states/WS/ENV/NAME/quota to it, read access), so that the token a
// configuration's backend uses can ask; and in the JSON API. Limits are
// set through the control API: on an open server (AuthNone) a state's
// only.
func (h *Handler) quotaRoutes() {
	// The same answer on the protocol lane, where a tenant's token reaches
	// its own states (/v1/states/{ws}/{env}/{state}/quota).
	h.register(Route{Pattern: "GET /v1/states/{name}/quota", AliasOf: "GET /v1/api/states/{name}/quota"}, h.stateQuota)
	h.api("GET /v1/api/states/{name}/quota", h.stateQuota)
	h.control("GET /v1/api/quotas", func(r *http.Request, c *tenancy.Control, _ kilolock.Caller) (int, any, error) {
		out, err := c.Quotas(r.Context())
		if out == nil {
			out = []kilolock.QuotaSetting{}
		}
		return http.StatusOK, out, err
	})
	h.control("PUT /v1/api/quotas", h.setQuota)
}

// QuotaRequest is the wire type the client shares.
type QuotaRequest = client.QuotaRequest

// setQuota answers PUT /v1/api/quotas with the change made.
func (h *Handler) setQuota(r *http.Request, c *tenancy.Control, by kilolock.Caller) (int, any, error) {
	var req QuotaRequest
	if err := h.controlRequest(r, &req); err != nil {
		return 0, nil, err
	}
	if (req.Limit == nil) == !req.Clear {
		return 0, nil, &kilolock.InvalidError{Code: "invalid_quota", Message: "a quota change needs a limit, or clear, and not both",
			Hint: `send {"scope": "state", "target": "NAME", "limit": {"soft": 80, "hard": 100}} ({"unlimited": true}), or {"scope": …, "target": …, "clear": true}`}
	}
	if h.auth != AuthToken && !info(r).inProcess && req.Scope != kilolock.QuotaState {
		return 0, nil, errTenancyDisabled
	}
	if err := c.SetQuota(r.Context(), by, req.QuotaChange); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, req, nil
}

// stateQuota answers GET …/states/{name}/quota[?delta=N]: how the state
// and its environment stand against their limits, now or after a change
// of N managed instances (a plan's delta: kl quota check). A delta that
// would grow a scope past its hard limit is answered 403 quota_exceeded,
// as its commit would be, with every scope counted.
func (h *Handler) stateQuota(w http.ResponseWriter, r *http.Request) error {
	var delta int64
	if s := r.URL.Query().Get("delta"); s != "" {
		var err error
		if delta, err = intParam(s, "delta", -quota.MaxLimit, quota.MaxLimit); err != nil {
			return err
		}
	}
	st, err := h.engine.QuotaStatus(r.Context(), r.PathValue("name"), delta)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// quotaBody adds a quota's refusal to an error body: the scope that
// refused, its figures, and every scope counted.
func quotaBody(b *errorBody, qe *kilolock.QuotaError) {
	r := qe.Refused
	b.Scope, b.Target, b.LimitFrom, b.Counts = r.Scope, r.Target, r.From, qe.Counts
	current, result, soft, hard := r.Current, r.Result, r.Limit.Soft, r.Limit.Hard
	b.Current, b.Result, b.Soft, b.Hard = &current, &result, &soft, &hard
}

// recordQuotaRefusal logs a quota's refusal with the request id and its
// figures, and audits it (at most identifiedAuditBurst a minute per
// state); the CLIs print only "HTTP error: 403".
func (h *Handler) recordQuotaRefusal(r *http.Request, qe *kilolock.QuotaError, hint string) {
	ri := info(r)
	actor := ri.actor
	if actor == "" {
		actor = "anonymous"
	}
	c := qe.Refused
	audited := h.identified.allow("quota:"+qe.State, time.Now())
	h.log.Warn("request denied", "request_id", ri.id, "reason", "quota_exceeded", "status", http.StatusForbidden, "actor", actor,
		"method", r.Method, "path", r.URL.Path, "state", qe.State, "scope", c.Scope, "target", c.Target,
		"current", c.Current, "result", c.Result, "soft", c.Limit.Soft, "hard", c.Limit.Hard, "limit_from", c.From, "hint", hint, "audited", audited)
	ts, ok := h.engine.Store().(tenancy.TenantStore)
	if !ok || !audited {
		return
	}
	e := &kilolock.AuditEntry{Actor: actor, Action: r.Method + " " + routeKind(r.URL.Path), Target: r.URL.Path, From: r.RemoteAddr, Denied: true,
		Reason: "quota_exceeded", RequestID: ri.id}
	if err := ts.AppendAudit(context.WithoutCancel(r.Context()), e); err != nil {
		h.log.Error("audit a quota refusal", "request_id", ri.id, "err", err)
	}
}

// quotaWarningFields are the log fields of a write's quota warnings.
func quotaWarningFields(ws []kilolock.QuotaCount) []any {
	var kv []any
	for i, w := range ws {
		key := "quota_warning"
		if i > 0 {
			key += strconv.Itoa(i + 1)
		}
		kv = append(kv, key, w.Message())
	}
	return kv
}

// asQuotaError returns err's *QuotaError, if it is one.
func asQuotaError(err error) (*kilolock.QuotaError, bool) {
	var qe *kilolock.QuotaError
	ok := errors.As(err, &qe)
	return qe, ok
}

package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// QuotaRequest is the body of PUT /v1/api/quotas: a target (scope and
// target, with the workspace an environment must belong to) and the
// limit to set, or clear true to clear the target's own limit.
type QuotaRequest struct {
	tenancy.QuotaChange
	Clear bool `json:"clear,omitempty"`
}

// Quota is how a state and its environment stand against their limits,
// now or after a change of delta managed instances (GET
// /v1/api/states/NAME/quota?delta=N); a delta past a hard limit answers
// *kilolock.QuotaError.
func (c *Client) Quota(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	q := url.Values{}
	if delta != 0 {
		q.Set("delta", strconv.FormatInt(delta, 10))
	}
	var out kilolock.QuotaStatus
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/quota", query: q, state: name}, &out)
}

// Quotas lists the limits set (GET /v1/api/quotas).
func (c *Client) Quotas(ctx context.Context) ([]kilolock.QuotaSetting, error) {
	var out []kilolock.QuotaSetting
	return out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/quotas"}, &out)
}

// SetQuota sets or clears a target's limit (PUT /v1/api/quotas).
func (c *Client) SetQuota(ctx context.Context, req QuotaRequest) (*QuotaRequest, error) {
	var out QuotaRequest
	return &out, c.do(ctx, request{method: http.MethodPut, path: "/v1/api/quotas"}.jsonBody(req), &out)
}

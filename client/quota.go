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
	var out kilolock.QuotaStatus
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/quota", query: deltaQuery(delta), state: name}, &out)
}

// StateQuota is Quota asked at the state's protocol address (GET
// /v1/states/NAME/quota), with the credentials Terraform's http backend
// sends: a configuration's own token is enough.
func (c *Client) StateQuota(ctx context.Context, name string, delta int64) (*kilolock.QuotaStatus, error) {
	var out kilolock.QuotaStatus
	return &out, c.do(ctx, request{method: http.MethodGet, path: statePath(name) + "/quota", query: deltaQuery(delta), state: name}, &out)
}

// deltaQuery is ?delta=N, nothing for 0.
func deltaQuery(delta int64) url.Values {
	q := url.Values{}
	if delta != 0 {
		q.Set("delta", strconv.FormatInt(delta, 10))
	}
	return q
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

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kilolock/kilolock/tenancy/trust"
)

// AddTrustPolicy lets CI identity tokens matching p reach an environment
// (POST /v1/api/trust-policies); its ID and Created are the server's.
func (c *Client) AddTrustPolicy(ctx context.Context, p trust.Policy) (*trust.Policy, error) {
	var out trust.Policy
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/trust-policies"}.jsonBody(p), &out)
}

// TrustPolicies lists the trust policies, of one environment when env is
// set (GET /v1/api/trust-policies).
func (c *Client) TrustPolicies(ctx context.Context, env string) ([]trust.Policy, error) {
	q := url.Values{}
	if env != "" {
		q.Set("environment", env)
	}
	var out []trust.Policy
	return out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/trust-policies", query: q}, &out)
}

// RemoveTrustPolicy removes a trust policy (DELETE
// /v1/api/trust-policies/ID).
func (c *Client) RemoveTrustPolicy(ctx context.Context, id string) (*Removed, error) {
	var out Removed
	return &out, c.do(ctx, request{method: http.MethodDelete, path: "/v1/api/trust-policies/" + seg(id)}, &out)
}

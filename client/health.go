package client

import (
	"context"
	"net/http"

	"github.com/kilolock/kilolock/tenancy"
)

// Status is the answer of /healthz ("ok") and /readyz ("ready").
type Status struct {
	Status string `json:"status"`
}

// VersionInfo is a server's build: the answer of /versionz.
type VersionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Date is the build date, or the commit's.
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go_version"`
}

// Health reports whether the server's process serves (GET /healthz).
func (c *Client) Health(ctx context.Context) (*Status, error) {
	var out Status
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/healthz"}, &out)
}

// Ready reports whether the server's database answers (GET /readyz); a
// replica that cannot serve answers an *Error matching
// kilolock.ErrUnavailable (after the client's retries).
func (c *Client) Ready(ctx context.Context) (*Status, error) {
	var out Status
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/readyz"}, &out)
}

// Version is the server's build (GET /versionz).
func (c *Client) Version(ctx context.Context) (*VersionInfo, error) {
	var out VersionInfo
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/versionz"}, &out)
}

// Whoami is what the client's credentials reach: their token, workspaces
// and environments (GET /v1/whoami, on a server with --auth=token).
func (c *Client) Whoami(ctx context.Context) (*tenancy.Reach, error) {
	var out tenancy.Reach
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/v1/whoami"}, &out)
}

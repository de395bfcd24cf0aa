package client

import (
	"context"
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
)

// TagRequest is the body of PUT /v1/api/states/{name}/tags/{tag}.
type TagRequest struct {
	Ref         string `json:"ref"` // a version reference; empty is @latest
	Description string `json:"description,omitempty"`
}

// TagList is the answer of GET /v1/api/states/NAME/tags.
type TagList struct {
	Tags []history.Tag `json:"tags"`
}

// OK is the answer of a request that returns nothing else.
type OK struct {
	OK bool `json:"ok"`
}

// DriftList is the answer of GET /v1/api/states/NAME/drift: the drift
// recorded, per instance.
type DriftList struct {
	Drift []drift.DriftRecord `json:"drift"`
}

// RefreshAnswer is the answer of POST /v1/api/states/NAME/refresh: the
// version the accepted refresh made.
type RefreshAnswer struct {
	Version *kilolock.Version `json:"version"`
}

// Tags lists a state's tags (GET /v1/api/states/NAME/tags).
func (c *Client) Tags(ctx context.Context, name string) (*TagList, error) {
	var out TagList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/tags", state: name}, &out)
}

// SetTag names a version (PUT /v1/api/states/NAME/tags/TAG).
func (c *Client) SetTag(ctx context.Context, name, tag string, req TagRequest) (*history.Tag, error) {
	var out history.Tag
	return &out, c.do(ctx, request{method: http.MethodPut, path: apiState(name) + "/tags/" + seg(tag), state: name}.jsonBody(req), &out)
}

// DeleteTag removes a tag (DELETE /v1/api/states/NAME/tags/TAG).
func (c *Client) DeleteTag(ctx context.Context, name, tag string) (*OK, error) {
	var out OK
	return &out, c.do(ctx, request{method: http.MethodDelete, path: apiState(name) + "/tags/" + seg(tag), state: name}, &out)
}

// Drift lists the drift recorded on a state (GET
// /v1/api/states/NAME/drift).
func (c *Client) Drift(ctx context.Context, name string) (*DriftList, error) {
	var out DriftList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/drift", state: name}, &out)
}

// RecordDrift records what a refresh-only plan found (POST
// /v1/api/states/NAME/drift).
func (c *Client) RecordDrift(ctx context.Context, name string, rep *drift.DriftReport) (*drift.DriftCheck, error) {
	var out drift.DriftCheck
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/drift", state: name}.jsonBody(rep), &out)
}

// AcceptRefresh writes a refreshed state file as a new version (POST
// /v1/api/states/NAME/refresh).
func (c *Client) AcceptRefresh(ctx context.Context, name string, refreshed []byte) (*RefreshAnswer, error) {
	var out RefreshAnswer
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/refresh", body: refreshed, ctype: "application/json", state: name}, &out)
}

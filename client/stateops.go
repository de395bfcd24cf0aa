package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// RollbackRequest is the body of POST /v1/api/states/{name}/rollback.
type RollbackRequest struct {
	To      string `json:"to"`                // a version reference: @3, @-1, serial:7
	Apply   bool   `json:"apply"`             // false is a dry run
	Address string `json:"address,omitempty"` // roll back one instance or resource only
}

// RollbackResponse is the answer to POST …/rollback: the plan, and for an
// applied rollback the new version (absent when nothing changed).
type RollbackResponse struct {
	history.RollbackResult
	DryRun bool `json:"dry_run"`
}

// StateRmRequest is the body of POST /v1/api/states/{name}/state/rm.
type StateRmRequest struct {
	Addresses []string `json:"addresses"`
	DryRun    bool     `json:"dry_run"`
}

// StateMvRequest is the body of POST /v1/api/states/{name}/state/mv.
type StateMvRequest struct {
	From   string `json:"from"`
	To     string `json:"to"`
	DryRun bool   `json:"dry_run"`
}

// ImportResponse is the answer to POST /v1/api/states/{name}/import.
type ImportResponse struct {
	Version   kilolock.Version    `json:"version"`
	Stats     kilolock.WriteStats `json:"stats"`
	Unchanged bool                `json:"unchanged"`
}

// AddressChanges is the answer of GET
// /v1/api/states/NAME/address-history: every version that changed one
// address.
type AddressChanges struct {
	Changes []history.AddressChange `json:"changes"`
}

// InstanceList is the answer of GET /v1/api/states/NAME/state/list.
type InstanceList struct {
	Instances []history.InstanceSummary `json:"instances"`
}

// refQuery is ?ref=REF, nothing for "" (the latest version).
func refQuery(ref string) url.Values {
	q := url.Values{}
	if ref != "" {
		q.Set("ref", ref)
	}
	return q
}

// Show summarizes a version: its counts and resources (GET
// /v1/api/states/NAME/versions/REF/summary); ref is @N, @latest, @-K,
// serial:S or a tag.
func (c *Client) Show(ctx context.Context, name, ref string) (*history.VersionView, error) {
	var out history.VersionView
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/versions/" + seg(ref) + "/summary", state: name}, &out)
}

// ShowInstance is one instance of a version, ref "" for the latest (GET
// /v1/api/states/NAME/instance).
func (c *Client) ShowInstance(ctx context.Context, name, ref, address string) (*history.InstanceView, error) {
	q := refQuery(ref)
	q.Set("address", address)
	var out history.InstanceView
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/instance", query: q, state: name}, &out)
}

// Diff compares two versions, to "" for the latest (GET
// /v1/api/states/NAME/diff).
func (c *Client) Diff(ctx context.Context, name, from, to string) (*history.StateDiff, error) {
	q := url.Values{"from": {from}}
	if to != "" {
		q.Set("to", to)
	}
	var out history.StateDiff
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/diff", query: q, state: name}, &out)
}

// AddressHistory lists the versions that changed address (GET
// /v1/api/states/NAME/address-history).
func (c *Client) AddressHistory(ctx context.Context, name, address string) (*AddressChanges, error) {
	var out AddressChanges
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/address-history", query: url.Values{"address": {address}}, state: name}, &out)
}

// Rollback makes a new version with the contents of an older one, or only
// shows what it would change when req.Apply is false (POST
// /v1/api/states/NAME/rollback).
func (c *Client) Rollback(ctx context.Context, name string, req RollbackRequest) (*RollbackResponse, error) {
	var out RollbackResponse
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/rollback", state: name}.jsonBody(req), &out)
}

// StateRm removes instances from a state as a new version (POST
// /v1/api/states/NAME/state/rm).
func (c *Client) StateRm(ctx context.Context, name string, req StateRmRequest) (*history.StateOpResult, error) {
	var out history.StateOpResult
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/state/rm", state: name}.jsonBody(req), &out)
}

// StateMv renames an address within a state as a new version (POST
// /v1/api/states/NAME/state/mv).
func (c *Client) StateMv(ctx context.Context, name string, req StateMvRequest) (*history.StateOpResult, error) {
	var out history.StateOpResult
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/state/mv", state: name}.jsonBody(req), &out)
}

// StateList lists a state's instances, those matching pattern when set
// (GET /v1/api/states/NAME/state/list).
func (c *Client) StateList(ctx context.Context, name, pattern string) (*InstanceList, error) {
	q := url.Values{}
	if pattern != "" {
		q.Set("pattern", pattern)
	}
	var out InstanceList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/state/list", query: q, state: name}, &out)
}

// Export opens a version as a state file, ref "" for the latest (GET
// /v1/api/states/NAME/export). Close it.
func (c *Client) Export(ctx context.Context, name, ref string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: apiState(name) + "/export", query: refQuery(ref), state: name})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Import writes a state file as a new version (POST
// /v1/api/states/NAME/import); force takes it although its lineage or
// serial would be refused.
func (c *Client) Import(ctx context.Context, name string, state []byte, force bool) (*ImportResponse, error) {
	q := url.Values{}
	if force {
		q.Set("force", "true")
	}
	var out ImportResponse
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/import", query: q, body: state, ctype: "application/json", state: name}, &out)
}

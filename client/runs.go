package client

import (
	"context"
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// RunRequest is the body of POST /v1/api/states/{name}/runs. Lease is a Go
// duration ("15m", "90s"); empty means kilolock.DefaultLease. Actor empty
// means the X-Kilolock-Actor header (else "kl").
type RunRequest struct {
	Actor        string                 `json:"actor"`
	Info         string                 `json:"info,omitempty"`
	Reservations []kilolock.Reservation `json:"reservations"`
	SourceSerial uint64                 `json:"source_serial"`
	Lease        string                 `json:"lease,omitempty"`
}

// RunEndRequest is the body of POST /v1/api/runs/{id}/end.
type RunEndRequest struct {
	Status kilolock.RunStatus `json:"status"`
	Reason string             `json:"reason,omitempty"`
}

// ChangedSinceRequest is the body of POST
// /v1/api/states/{name}/changed-since.
type ChangedSinceRequest struct {
	Serial   uint64            `json:"serial"`
	Patterns []reserve.Pattern `json:"patterns"`
}

// RunList is the answer of GET /v1/api/states/NAME/runs: newest first.
type RunList struct {
	Runs []kilolock.ApplyRun `json:"runs"`
}

// ChangedAddresses is the answer of POST
// /v1/api/states/NAME/changed-since.
type ChangedAddresses struct {
	Addresses []string `json:"addresses"`
}

// StartRun starts an orchestrated apply on a state, waiting for its
// reservations (POST /v1/api/states/NAME/runs).
func (c *Client) StartRun(ctx context.Context, name string, req RunRequest) (*kilolock.ApplyRun, error) {
	var out kilolock.ApplyRun
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/runs", state: name}.jsonBody(req), &out)
}

// RunsOptions filter a state's runs: only waiting and active ones, at
// most Limit (0: the server's default).
type RunsOptions struct {
	InFlight bool
	Limit    int
}

// Runs lists a state's apply runs, newest first (GET
// /v1/api/states/NAME/runs).
func (c *Client) Runs(ctx context.Context, name string, o RunsOptions) (*RunList, error) {
	q := limitQuery(o.Limit)
	if o.InFlight {
		q.Set("in_flight", "true")
	}
	var out RunList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/runs", query: q, state: name}, &out)
}

// ChangedSince lists the addresses matching req.Patterns that changed
// after serial req.Serial (POST /v1/api/states/NAME/changed-since).
func (c *Client) ChangedSince(ctx context.Context, name string, req ChangedSinceRequest) (*ChangedAddresses, error) {
	var out ChangedAddresses
	return &out, c.do(ctx, request{method: http.MethodPost, path: apiState(name) + "/changed-since", state: name}.jsonBody(req), &out)
}

func runPath(id string) string { return "/v1/api/runs/" + seg(id) }

// Run is an apply run as of now, expired once its lease ran out (GET
// /v1/api/runs/ID).
func (c *Client) Run(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	var out kilolock.ApplyRun
	return &out, c.do(ctx, request{method: http.MethodGet, path: runPath(id)}, &out)
}

// AcquireRun asks for a waiting run's reservations (POST
// /v1/api/runs/ID/acquire): the run when it holds them, else an error
// matching kilolock.ErrLocked whose *kilolock.ReservedError names the
// blockers (ask again).
func (c *Client) AcquireRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	var out kilolock.ApplyRun
	return &out, c.do(ctx, request{method: http.MethodPost, path: runPath(id) + "/acquire"}, &out)
}

// RenewRun extends a run's lease (POST /v1/api/runs/ID/renew); a run
// aborted or expired answers *kilolock.RunEndedError: stop.
func (c *Client) RenewRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	var out kilolock.ApplyRun
	return &out, c.do(ctx, request{method: http.MethodPost, path: runPath(id) + "/renew"}, &out)
}

// EndRun ends a run as req says, releasing its reservations (POST
// /v1/api/runs/ID/end).
func (c *Client) EndRun(ctx context.Context, id string, req RunEndRequest) (*kilolock.ApplyRun, error) {
	var out kilolock.ApplyRun
	return &out, c.do(ctx, request{method: http.MethodPost, path: runPath(id) + "/end"}.jsonBody(req), &out)
}

// AbortRun aborts a run, releasing its reservations at once (POST
// /v1/api/runs/ID/abort).
func (c *Client) AbortRun(ctx context.Context, id string) (*kilolock.ApplyRun, error) {
	var out kilolock.ApplyRun
	return &out, c.do(ctx, request{method: http.MethodPost, path: runPath(id) + "/abort"}, &out)
}

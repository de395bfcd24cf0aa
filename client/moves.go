package client

import (
	"context"
	"net/http"

	"github.com/kilolock/kilolock/history"
)

// MoveRequest is the body of POST /v1/api/moves: a move of instances
// between two states, a split or a merge.
//
// From and To name states as the caller reaches them: the operator (and
// an open server) by their names; an automation token or a PAT as
// "ws_…/env_…/NAME", the path of the authenticated lane, and it needs
// write on both environments.
type MoveRequest struct {
	// Operation is "mv" (the default), "split" (To is made) or "merge"
	// (everything of From moves, From is archived).
	Operation string `json:"operation,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Addresses are what moves for mv and split: for mv each with an
	// optional new address; split takes From only.
	Addresses []history.MovePair `json:"addresses,omitempty"`
	DryRun    bool               `json:"dry_run"`
}

// MoveList is the answer of GET /v1/api/states/NAME/moves: the moves the
// state took part in, newest first.
type MoveList struct {
	Moves []history.MoveRecord `json:"moves"`
}

// Move moves resources between states, splits one or merges two (POST
// /v1/api/moves).
func (c *Client) Move(ctx context.Context, req MoveRequest) (*history.MoveResult, error) {
	var out history.MoveResult
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/moves", state: req.From}.jsonBody(req), &out)
}

// Moves lists the moves a state took part in (GET
// /v1/api/states/NAME/moves).
func (c *Client) Moves(ctx context.Context, name string) (*MoveList, error) {
	var out MoveList
	return &out, c.do(ctx, request{method: http.MethodGet, path: apiState(name) + "/moves", state: name}, &out)
}

package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/inventory"
)

// QueryRequest is the body of POST /v1/api/query.
type QueryRequest struct {
	SQL string `json:"sql"`
}

// Query runs a read-only SQL query over the normalized tables (POST
// /v1/api/query); a tenant's token sees only its states. Numbers come
// back as json.Number, exact.
func (c *Client) Query(ctx context.Context, sql string) (*kilolock.QueryResult, error) {
	var out kilolock.QueryResult
	return &out, c.do(ctx, request{method: http.MethodPost, path: "/v1/api/query", numbers: true}.jsonBody(QueryRequest{SQL: sql}), &out)
}

// Search finds resource instances across states (GET /v1/api/search).
func (c *Client) Search(ctx context.Context, f inventory.Filters) (*inventory.Page, error) {
	var out inventory.Page
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/search", query: f.Values()}, &out)
}

// Duplicates lists resources that stand for the same object in several
// states, of one type when typ is set (GET /v1/api/search/duplicates).
func (c *Client) Duplicates(ctx context.Context, typ string) (*inventory.DuplicateList, error) {
	q := url.Values{}
	if typ != "" {
		q.Set("type", typ)
	}
	var out inventory.DuplicateList
	return &out, c.do(ctx, request{method: http.MethodGet, path: "/v1/api/search/duplicates", query: q}, &out)
}

package httpbackend

import (
	"fmt"
	"net"
	"net/http"
	"sync"
)

// DefaultQueryConcurrency is how many queries (POST /v1/api/query) one
// credential may run at once unless Options.QueryConcurrency says
// otherwise. Each store serves users' SQL on a few connections of its own
// (four), so that one credential's endless queries hold at most half of
// them, and every other credential's queries still run.
const DefaultQueryConcurrency = 2

// queryGate bounds the queries each credential runs at once. It keeps a
// count only for the credentials running one, so it holds no more than
// the queries in flight.
type queryGate struct {
	limit   int // < 0: no limit
	mu      sync.Mutex
	running map[string]int
}

func newQueryGate(limit int) *queryGate {
	if limit == 0 {
		limit = DefaultQueryConcurrency
	}
	return &queryGate{limit: limit, running: map[string]int{}}
}

// enter counts a query of r's credential in, and returns what ends it; a
// credential at its limit gets the 429 too_many_queries.
func (g *queryGate) enter(r *http.Request) (done func(), err error) {
	if g.limit < 0 {
		return func() {}, nil
	}
	key := queryCredential(r)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[key] >= g.limit {
		return nil, &httpError{status: http.StatusTooManyRequests, code: "too_many_queries", retryAfter: true,
			message: fmt.Sprintf("this credential already runs %d queries at once, the most kld lets one credential run", g.limit),
			hint:    fmt.Sprintf("wait for one to end and retry in %d seconds; narrow long queries with WHERE and LIMIT; an operator may raise kld --query-concurrency (KL_QUERY_CONCURRENCY)", retryAfterSeconds)}
	}
	g.running[key]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.running[key]--; g.running[key] <= 0 {
			delete(g.running, key)
		}
	}, nil
}

// queryCredential is what a query counts under: the token or PAT it was
// authenticated with (the operator's on the operator token), or the
// remote host of a server without authentication.
func queryCredential(r *http.Request) string {
	if actor := info(r).actor; actor != "" {
		return "credential " + actor
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "host " + host
}

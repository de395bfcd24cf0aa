package httpbackend

import (
	"context"
	"net/http"

	"github.com/kilolock/kilolock"
)

// operatorKey marks the context of an in-process operator's requests.
type operatorKey struct{}

// AsOperator returns ctx marked so that a request made with it, handed to
// a Handler's ServeHTTP in the same process (an in-process transport, no
// socket), is served as the operator's: every route of the JSON API,
// tenancy, trust policies and backups included, whatever the Handler's
// AuthMode, with by as the caller its changes are audited as (by.From as
// its remote address). The versions it makes still name the request's
// ActorHeader, as a server's do.
//
// A request that arrives over a socket never carries the mark: net/http
// gives each one a context of its own. This is how kl --database runs the
// same API as a server, as the operator of that database.
func AsOperator(ctx context.Context, by kilolock.Caller) context.Context {
	return context.WithValue(ctx, operatorKey{}, by)
}

// serveOperator serves a request of the in-process operator by.
func (h *Handler) serveOperator(w http.ResponseWriter, r *http.Request, ri *reqInfo, by kilolock.Caller) {
	ri.actor, ri.inProcess = by.Actor, true
	r.RemoteAddr = by.From
	mux := h.mux
	if h.operatorMux != nil {
		mux = h.operatorMux
	}
	mux.ServeHTTP(w, r)
}

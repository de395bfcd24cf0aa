package httpbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/webui"
	"github.com/kilolock/kilolock/tenancy"
)

// reqInfo is what the handlers note about a request for its log line and
// for the error writer.
type reqInfo struct {
	id       string
	lockID   string
	errCode  string
	actor    string // the credential of an authenticated request
	protocol bool   // a Terraform protocol route: 423 bodies are a LockInfo
	// scope is what a tenant's query may see (nil: the operator's, or an
	// open server's, query sees every state).
	scope *tenancy.QueryScope
	// readOnly is a caller that may only read (a read-scope token): its
	// locks are plans' read locks, and it releases only those.
	readOnly bool
	// noCreate is a caller whose locks must not create a state: one that
	// may only read, or whose workspace is suspended.
	noCreate bool
	// workload is the identity of a CI job's ID token (workload.go): a
	// lock it takes names it as holder, a version it writes as actor.
	workload string
	// conflict is the refused write or setting answered, if any: its
	// addresses go in the log line, since Terraform shows only
	// "HTTP error: 409" to the person whose apply failed.
	conflict *errorBody
	// quotaWarnings are a write's quota warnings, for its log line.
	quotaWarnings []kilolock.QuotaCount
	// w is the request's ResponseWriter, for reading its body (deadlines);
	// nil outside ServeHTTP.
	w http.ResponseWriter
	// lockBody is a LOCK's body and the error reading it gave, once
	// lockBodyRead (see lockBody).
	lockBody     []byte
	lockBodyErr  error
	lockBodyRead bool
	// bodyBytes is what its bodies hold of the body budget, given back
	// when the request ends, and spooled its bodies kept in files, closed
	// then.
	bodyBytes int64
	bodyKey   string // whom bodyBytes count against (see budgetKey)
	spooled   []*spooledBody
	// host is the client's address, without its port.
	host string
	// inProcess is a request of the in-process operator (inprocess.go).
	inProcess bool
}

// closeAfter asks the server to close the connection after the answer: a
// body was left unread.
func (ri *reqInfo) closeAfter() {
	if ri.w != nil {
		ri.w.Header().Set("Connection", "close")
	}
}

type reqInfoKey struct{}

// info returns the request's reqInfo (a throwaway one outside ServeHTTP, so
// handlers never need a nil check).
func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// ServeHTTP serves a request: it gives it a request id, recovers a panic
// into a 500, and records one log line and the request metrics.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ri := &reqInfo{id: requestID(r), host: remoteHost(r.RemoteAddr)}
	w.Header().Set("X-Request-Id", ri.id)
	if webui.OverTLS(r, h.publicURL) {
		// Browsers that reached kld over HTTPS never try plain HTTP for a
		// year. No includeSubDomains: other hosts of the domain are not
		// kld's to decide for.
		w.Header().Set("Strict-Transport-Security", "max-age=31536000")
	}
	rec := &recorder{ResponseWriter: w}
	ri.w = rec
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))

	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h.log.Error("panic serving request", "request_id", ri.id, "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rec.wroteHeader {
				h.writeError(rec, r, &httpError{status: http.StatusInternalServerError, code: "internal", message: "the server failed while handling the request", hint: "this is a bug in kilolock: report it with the request id " + ri.id + " (its stack is in the server log); nothing was half-written, each write is one transaction"})
			}
		}
		h.releaseBodies(ri)
		h.finish(rec, r, ri, time.Since(start))
	}()

	if name, bad := badPath(r.URL.Path); bad {
		h.writeError(rec, r, invalidName(name))
		return
	}
	if by, ok := r.Context().Value(operatorKey{}).(kilolock.Caller); ok {
		h.serveOperator(rec, r, ri, by)
		return
	}
	if h.auth == AuthToken {
		var ok bool
		if r, ok = h.authorize(rec, r); !ok {
			return
		}
	} else if err := localName(r.URL.Path); err != nil {
		h.writeError(rec, r, err)
		return
	}
	h.mux.ServeHTTP(rec, r)
}

// finish records the request: metrics by route and one log line.
func (h *Handler) finish(rec *recorder, r *http.Request, ri *reqInfo, d time.Duration) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	route := strings.TrimSpace(r.Pattern[strings.IndexByte(r.Pattern, ' ')+1:])
	if route == "" || route == "/" {
		route = "unmatched"
	}
	h.metrics.ObserveRequest(route, r.Method, status, d)

	level := log.InfoLevel
	switch {
	case status >= 500:
		level = log.ErrorLevel
	case ri.errCode == "state_not_found" || ri.errCode == "locked":
		// The protocol's normal flow: a first `init`, a -lock-timeout wait.
	case status >= 400:
		level = log.WarnLevel
	case route == "/healthz" || route == "/readyz" || route == "/metrics":
		level = log.DebugLevel // probes and scrapes every few seconds
	}
	kv := []any{
		"method", r.Method,
		"path", r.URL.Path,
		"status", status,
		"duration", d.Round(time.Microsecond),
		"bytes_in", max(r.ContentLength, 0),
		"bytes_out", rec.bytes,
		"request_id", ri.id,
	}
	if ri.lockID != "" {
		kv = append(kv, "lock_id", ri.lockID)
	}
	if ri.actor != "" {
		kv = append(kv, "actor", ri.actor)
	}
	if ri.errCode != "" {
		kv = append(kv, "error", ri.errCode)
	}
	if c := ri.conflict; c != nil {
		kv = append(kv, conflictLogFields(c)...)
	}
	if len(ri.quotaWarnings) > 0 {
		kv = append(kv, quotaWarningFields(ri.quotaWarnings)...)
	}
	h.log.Log(level, "request", kv...)
}

// maxLoggedAddresses bounds the addresses named in one request log line;
// the engine's own line and `kl conflicts` have all of them.
const maxLoggedAddresses = 50

// conflictLogFields are the log fields of a refused write: the addresses in
// conflict, the serials and who won.
func conflictLogFields(c *errorBody) []any {
	var kv []any
	if n := len(c.Addresses); n > 0 {
		shown := strings.Join(c.Addresses[:min(n, maxLoggedAddresses)], " ")
		if n > maxLoggedAddresses {
			shown += fmt.Sprintf(" (and %d more)", n-maxLoggedAddresses)
		}
		kv = append(kv, "conflicting_addresses", shown)
	}
	if c.LatestSerial != nil {
		kv = append(kv, "latest_serial", *c.LatestSerial)
	}
	if c.BaseSerial != nil {
		kv = append(kv, "base_serial", *c.BaseSerial)
	}
	if w := c.Winner; w != nil {
		kv = append(kv, "winner", fmt.Sprintf("%s (lock id %s, version %d)", orUnknown(w.Actor), w.LockID, w.Version))
	}
	if len(c.Holders) > 0 {
		ids := make([]string, len(c.Holders))
		for i, l := range c.Holders {
			ids[i] = l.ID
		}
		kv = append(kv, "holders", strings.Join(ids, " "))
	}
	return kv
}

// requestID returns the client's X-Request-Id when it is a sane token, so a
// proxy's id follows the request, else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") == "" {
		return id
	}
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// badPath reports whether the path has empty, "." or ".." segments under a
// state route, and the offending name. http.ServeMux would answer those with
// a redirect to the cleaned path, which a client would follow to another
// state; they are refused instead.
func badPath(path string) (string, bool) {
	for _, prefix := range []string{"/v1/states/", "/v1/state-unlock/", "/v1/api/states/"} {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		for seg := range strings.SplitSeq(rest, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return rest, true
			}
		}
	}
	return "", false
}

// recorder captures the status and the bytes written for the log line.
type recorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
}

func (w *recorder) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status = code
		w.wroteHeader = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

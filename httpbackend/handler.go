package httpbackend

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/buildinfo"
	"github.com/kilolock/kilolock/internal/webui"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// DefaultBodyLimit is the largest state a POST may carry unless
// Options.BodyLimit says otherwise.
const DefaultBodyLimit int64 = 64 << 20

// lockBodyLimit bounds LOCK, UNLOCK and JSON API bodies: a LockInfo or a
// query is a few hundred bytes.
const lockBodyLimit int64 = 1 << 20

// VersionInfo is what GET /versionz reports.
type VersionInfo = client.VersionInfo

// Options configure a Handler. The zero value is usable.
type Options struct {
	// Logger receives one line per request and the stack of any panic.
	// Nil discards. Logged values carry what clients send; NewLogger makes
	// a logger that keeps each entry on one line whatever they hold.
	Logger *log.Logger
	// BodyLimit is the largest request body accepted for a state, in bytes.
	// Zero means DefaultBodyLimit.
	BodyLimit int64
	// BodyMemory bounds the bytes of request bodies held at once across
	// all requests; a body that does not fit is answered 503 with
	// Retry-After. A body takes memory as its bytes arrive, never because
	// its Content-Length announces them. Zero means four times BodyLimit;
	// it is raised to BodyLimit, so that one body of the largest size
	// always fits. In AuthToken mode one credential's bodies (or, before
	// the credential is known, one client address's) hold at most half
	// of it, and at least BodyLimit: past its share a body is answered 429
	// with Retry-After, so that one credential's stalled uploads never
	// starve other clients.
	BodyMemory int64
	// BodyIdleTimeout is how long a body may pause (its first bytes
	// included) before it is answered 408. Zero means
	// DefaultBodyIdleTimeout.
	BodyIdleTimeout time.Duration
	// BodyMinRate is the average rate, in bytes a second, a body must keep
	// once BodyIdleTimeout has passed since its start, or be answered 408:
	// a slow client holds memory only so long. Zero means
	// DefaultBodyMinRate.
	BodyMinRate int64
	// Version is reported by /versionz. Zero means the build information of
	// the running binary.
	Version VersionInfo
	// Ready reports whether the server can do useful work, for /readyz.
	// Nil means pinging the engine's store.
	Ready func(ctx context.Context) error
	// Auth is how state requests are authenticated; AuthNone serves the
	// local lane to anyone.
	Auth AuthMode
	// OperatorToken is the secret of the operator token (klo_…), which alone
	// may use the JSON API in AuthToken mode. Only its hash is kept.
	OperatorToken string
	// PublicURL is where clients reach the server, when a proxy in front
	// of it terminates TLS: with https, the web view's cookies are Secure
	// and every answer carries Strict-Transport-Security, as when the
	// server serves TLS itself. Nil: only requests that came over TLS get
	// them.
	PublicURL *url.URL
	// QueryConcurrency is how many queries (POST /v1/api/query) one
	// credential may run at once; one more is answered 429 with
	// Retry-After. Zero means DefaultQueryConcurrency; a negative value
	// sets no limit.
	QueryConcurrency int
	// Metrics counts what the Handler does and serves /metrics:
	// prommetrics.New, on an embedding service's registry or one of its
	// own. Nil counts nothing and answers /metrics 404.
	Metrics Metrics
	// Trust verifies the OIDC ID tokens of CI jobs (workload identity)
	// in AuthToken mode, against the trust policies the store keeps
	// (trust.PolicyStore). Nil refuses ID tokens (401).
	Trust *trust.Verifier
}

// Handler serves the Terraform/OpenTofu HTTP backend protocol, the JSON API,
// health, version and metrics endpoints for one Engine. It is safe for
// concurrent use; several Handlers on Engines sharing one database (several
// kld replicas) stay correct, since every decision is taken by the store.
type Handler struct {
	engine      *kilolock.Engine
	log         *log.Logger
	bodyLimit   int64
	bodies      *bodyBudget
	bodyIdle    time.Duration
	bodyMinRate int64
	version     VersionInfo
	ready       func(ctx context.Context) error
	mux         *http.ServeMux
	// operatorMux serves the in-process operator of an open server
	// (inprocess.go): mux with the routes the operator token guards. Nil
	// in AuthToken mode, where mux has them.
	operatorMux *http.ServeMux
	ui          *webui.UI // the web view, parsed once for both muxes
	routeTable  []Route   // what register registered, for Routes
	metrics     Metrics   // Options.Metrics, or noMetrics
	// metricsHandler serves /metrics; metricsSummed serves it with the
	// series by state summed. Nil without Options.Metrics.
	metricsHandler http.Handler
	metricsSummed  http.Handler
	refused        *refusedLocks
	auth           AuthMode
	operator       *tenancy.TokenHash // nil: no operator token
	anonymous      *auditLimiter      // bounds audit rows of anonymous denials, per host
	identified     *auditLimiter      // and of a credential's denials, per credential
	rotation       rotation           // this process's key rotation (keys.go)
	publicURL      *url.URL           // Options.PublicURL
	queries        *queryGate         // bounds each credential's queries at once
	trust          *trust.Verifier    // Options.Trust
}

var _ http.Handler = (*Handler)(nil)

// New returns a Handler serving e.
func New(e *kilolock.Engine, o Options) *Handler {
	h := &Handler{
		engine:     e,
		log:        o.Logger,
		bodyLimit:  o.BodyLimit,
		version:    o.Version,
		ready:      o.Ready,
		mux:        http.NewServeMux(),
		refused:    newRefusedLocks(4096),
		anonymous:  newAuditLimiter(anonymousAuditBurst),
		identified: newAuditLimiter(identifiedAuditBurst),
		queries:    newQueryGate(o.QueryConcurrency),
	}
	h.auth, h.publicURL, h.trust = o.Auth, o.PublicURL, o.Trust
	if o.OperatorToken != "" {
		hash := tenancy.HashSecret(o.OperatorToken)
		h.operator = &hash
	}
	if h.log == nil {
		h.log = log.New(discard{})
	}
	if h.bodyLimit <= 0 {
		h.bodyLimit = DefaultBodyLimit
	}
	memory := o.BodyMemory
	if memory <= 0 {
		memory = 4 * h.bodyLimit
	}
	h.bodies = newBodyBudget(max(memory, h.bodyLimit), h.bodyLimit)
	h.bodyIdle, h.bodyMinRate = o.BodyIdleTimeout, o.BodyMinRate
	if h.bodyIdle <= 0 {
		h.bodyIdle = DefaultBodyIdleTimeout
	}
	if h.bodyMinRate <= 0 {
		h.bodyMinRate = DefaultBodyMinRate
	}
	if h.version == (VersionInfo{}) {
		bi := buildinfo.Info()
		h.version = VersionInfo{Version: bi.Version, Commit: bi.Commit, Date: bi.Date, GoVersion: bi.GoVersion}
	}
	if h.ready == nil {
		h.ready = e.Store().Ping
	}
	h.metrics = o.Metrics
	if h.metrics == nil {
		h.metrics = noMetrics{}
	}
	h.metricsHandler, h.metricsSummed = h.metrics.Attach(e, h.bodies.stats, h.log.Warn)
	h.routes(h.auth == AuthToken)
	if h.auth != AuthToken {
		// The in-process operator (inprocess.go) is served the routes the
		// operator token guards, on a mux of its own: no request from a
		// socket reaches them on an open server.
		open, table := h.mux, h.routeTable
		h.mux = http.NewServeMux()
		h.routes(true)
		h.operatorMux, h.mux, h.routeTable = h.mux, open, table
	}
	return h
}

// routes registers every route on h.mux; guarded, the routes the operator
// token guards (tenancy, trust, backups) too, else answers that they are
// closed. Protocol routes answer a held lock with the holder's LockInfo as
// the body, as Terraform and OpenTofu decode it.
func (h *Handler) routes(guarded bool) {
	const state = "/v1/states/{name}"
	// The Terraform/OpenTofu HTTP backend protocol.
	h.protocol("GET "+state, h.getState)
	h.protocol("POST "+state, h.postState)
	h.alias("PUT "+state, "POST "+state, h.postState) // update_method = "PUT"
	h.protocol("DELETE "+state, h.deleteState)
	// Outputs only, for terraform_remote_state (slice.go).
	h.protocol("GET "+state+"/outputs", h.getOutputs)
	h.protocol("LOCK "+state, h.lockState)
	h.protocol("UNLOCK "+state, h.unlockState)
	// lock_method/unlock_method = "POST" with lock_address/unlock_address
	// pointing here; DELETE on /lock is the GitLab-style unlock.
	h.alias("POST "+state+"/lock", "LOCK "+state, h.lockState)
	h.alias("LOCK "+state+"/lock", "LOCK "+state, h.lockState)
	h.alias("DELETE "+state+"/lock", "UNLOCK "+state, h.unlockState)
	h.alias("POST "+state+"/unlock", "UNLOCK "+state, h.unlockState)
	h.alias("UNLOCK "+state+"/unlock", "UNLOCK "+state, h.unlockState)
	// For proxies that drop the body of an UNLOCK.
	h.protocol("POST /v1/state-unlock/{name}", h.stateUnlock)

	// The JSON API used by kl.
	h.api("GET /v1/api/states", h.listStates)
	h.api("GET /v1/api/states/{name}", h.stateStatus)
	h.api("GET /v1/api/states/{name}/versions", h.listVersions)
	h.api("GET /v1/api/states/{name}/versions/{number}", h.getVersion)
	h.api("POST /v1/api/states/{name}/config", h.setConfig)
	h.api("GET /v1/api/states/{name}/rejections", h.listRejections)
	h.api("POST /v1/api/query", h.query)
	// History, diff, rollback and native state operations (stateops.go).
	h.api("GET /v1/api/states/{name}/versions/{ref}/summary", h.showVersion)
	h.api("GET /v1/api/states/{name}/instance", h.showInstance)
	h.api("GET /v1/api/states/{name}/diff", h.diffVersions)
	h.api("GET /v1/api/states/{name}/address-history", h.addressHistory)
	h.api("POST /v1/api/states/{name}/rollback", h.rollback)
	h.api("POST /v1/api/states/{name}/state/rm", h.stateRm)
	h.api("POST /v1/api/states/{name}/state/mv", h.stateMv)
	h.api("GET /v1/api/states/{name}/state/list", h.stateList)
	h.api("GET /v1/api/states/{name}/export", h.export)
	h.api("POST /v1/api/states/{name}/import", h.importState)
	// Dependency cones and sliced reads (slice.go).
	h.api("GET /v1/api/states/{name}/graph", h.stateGraph)
	h.api("GET /v1/api/states/{name}/slice", h.sliceState)
	// Tags and drift (tags.go).
	h.api("GET /v1/api/states/{name}/tags", h.listTags)
	h.api("PUT /v1/api/states/{name}/tags/{tag}", h.putTag)
	h.api("DELETE /v1/api/states/{name}/tags/{tag}", h.deleteTag)
	h.api("GET /v1/api/states/{name}/drift", h.listDrift)
	h.api("POST /v1/api/states/{name}/drift", h.recordDrift)
	h.api("POST /v1/api/states/{name}/refresh", h.acceptRefresh)
	// Apply runs and their reservations (runs.go).
	h.runRoutes()
	// Backups and retention (ops.go).
	h.opsRoutes(guarded)
	// Encryption at rest: keys and their rotation (keys.go).
	h.keyRoutes()
	// The inventory across states (search.go).
	h.searchRoutes()

	// Workspaces, environments, tokens, grants and the audit log
	// (control.go), only where the operator token guards them: on an open
	// server anyone could mint tokens that a later --auth=token would honour.
	if guarded {
		h.controlRoutes()
		h.trustRoutes()
	} else {
		disabled := func(w http.ResponseWriter, r *http.Request) error { return errTenancyDisabled }
		for _, p := range []string{"/v1/api/workspaces", "/v1/api/workspaces/", "/v1/api/tokens", "/v1/api/tokens/", "/v1/api/audit", "/v1/api/trust-policies", "/v1/api/trust-policies/"} {
			h.api(p, disabled)
		}
	}
	h.quotaRoutes()
	// Moves between states (moves.go).
	h.moveRoutes()
	h.api("GET /v1/whoami", h.whoami)

	h.api("GET /healthz", h.healthz)
	h.api("GET /readyz", h.readyz)
	h.api("GET /versionz", h.versionz)
	h.api("GET /metrics", h.serveMetrics)
	h.uiRoutes()

	h.mux.HandleFunc("/", h.fallback)
}

// handlerFunc is a route that reports failure by returning an error, written
// by the one error writer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (h *Handler) protocol(pattern string, fn handlerFunc) {
	h.register(Route{Pattern: pattern, Protocol: true}, fn)
}

func (h *Handler) api(pattern string, fn handlerFunc) { h.register(Route{Pattern: pattern}, fn) }

// alias registers a protocol route that spells the route of another
// again, for clients configured to use it.
func (h *Handler) alias(pattern, of string, fn handlerFunc) {
	h.register(Route{Pattern: pattern, Protocol: true, AliasOf: of}, fn)
}

// Route is one route the Handler serves: the JSON API, the backend
// protocol, health, version and metrics (the web view's pages are not
// among them). The client package calls each, AliasOf excepted; its
// round-trip test holds it to that.
type Route struct {
	// Pattern is the route's http.ServeMux pattern: "GET /v1/api/states".
	Pattern string
	// Protocol marks the Terraform/OpenTofu backend protocol's routes,
	// whose 423 carries the holder's LockInfo as the whole body.
	Protocol bool
	// AliasOf is the route this one spells again (Terraform's
	// update_method = "PUT", lock_address, unlock_address): same handler,
	// another method or path; a client calls AliasOf.
	AliasOf string
}

// Routes lists the routes the Handler serves, as they were registered.
func (h *Handler) Routes() []Route { return slices.Clone(h.routeTable) }

// Pattern is the pattern of the route that serves r, "" when none does
// (the web view, or an unknown path the fallback answers).
func (h *Handler) Pattern(r *http.Request) string {
	_, p := h.mux.Handler(r)
	for _, rt := range h.routeTable {
		if rt.Pattern == p {
			return p
		}
	}
	return ""
}

func (h *Handler) register(rt Route, fn handlerFunc) {
	h.routeTable = append(h.routeTable, rt)
	protocol := rt.Protocol
	h.mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
		info(r).protocol = protocol
		if err := fn(w, r); err != nil {
			h.writeError(w, r, err)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

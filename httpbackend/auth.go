package httpbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/internal/webui"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// AuthMode is how a Handler authenticates state requests.
type AuthMode string

// Auth modes.
const (
	// AuthNone serves the local lane (/v1/states/{name}) to anyone: the
	// embedded quick start.
	AuthNone AuthMode = ""
	// AuthToken serves only the authenticated lane,
	// /v1/states/{workspace_id}/{env_public_id}/{state_name}, to automation
	// tokens and personal access tokens; the JSON API under /v1/api/ to the
	// operator token. The engine's store must be a tenancy.TenantStore.
	AuthToken AuthMode = "token"
)

// touchEvery bounds how often a token's last-used time is written: once a
// minute per token is enough to tell a live token from a dead one, and
// keeps a write off most requests.
const touchEvery = time.Minute

// tenantPath is the authenticated lane's path form, for hints.
const tenantPath = "/v1/states/{workspace_id}/{env_public_id}/{state_name}"

// errTenancyDisabled answers the tenancy routes of a server without
// authentication.
var errTenancyDisabled = &httpError{status: http.StatusNotFound, code: "tenancy_disabled",
	message: "this server runs without authentication (--auth=none): it serves no workspaces, tokens or audit log",
	hint:    "start kld with --auth=token --operator-token klo_…, or manage tenancy on the database directly (kl --database … workspace create)"}

// denial is a refused request of the authenticated lane: its answer, and
// the reason logged and audited.
func denial(status int, code, message, hint string) error {
	return &httpError{status: status, code: code, message: message, hint: hint}
}

// authorize serves the state routes and the JSON API in AuthToken mode. It
// returns false when it answered the request itself (a denial); otherwise
// the request goes on, rewritten to the internal state name.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	path := r.URL.Path
	var err error
	switch {
	case strings.HasPrefix(path, "/v1/states/"):
		var rewritten *http.Request
		rewritten, err = h.authorizeState(r)
		if err == nil {
			return rewritten, true
		}
	case strings.HasPrefix(path, "/v1/state-unlock/"):
		err = denial(http.StatusUnauthorized, "auth_required", "this server requires credentials: the local lane is not served", "use the authenticated path "+tenantPath+" (unlock with UNLOCK on it)")
	case (path == "/v1/api/query" && r.Method == http.MethodPost || isSearch(path) && r.Method == http.MethodGet) && !h.operatorCredential(r):
		// A tenant's SQL or search: scoped to what its token reads
		// (tenantquery.go).
		var scope *tenancy.QueryScope
		if scope, err = h.authorizeTenantQuery(r); err == nil {
			info(r).scope = scope
			return r, true
		}
	case path == "/v1/api/moves" && r.Method == http.MethodPost && !h.operatorCredential(r):
		// A tenant's move: each side decided as a write (moves.go).
		return r, true
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/v1/api/states/") && !h.operatorCredential(r):
		// A tenant's read of one of its states (tenantapi.go).
		var rewritten *http.Request
		if rewritten, err = h.authorizeTenantRead(r); err == nil {
			return rewritten, true
		}
	case strings.HasPrefix(path, "/v1/api/"):
		err = h.authorizeOperator(r)
		if err == nil {
			info(r).actor = "operator"
			if r.Method != http.MethodGet || !strings.HasPrefix(path, "/v1/api/states/") {
				return r, true
			}
			if err = h.operatorShortName(r); err == nil {
				return r, true
			}
		}
	default:
		return r, true
	}
	h.deny(w, r, err)
	return r, false
}

// deny answers err, logs it with the request id, reason and hint, and
// audits it. Anonymous denials are audited at most anonymousAuditBurst a
// minute per remote host, a credential's at most identifiedAuditBurst a
// minute per credential; every one is logged and counted.
func (h *Handler) deny(w http.ResponseWriter, r *http.Request, err error) {
	h.recordDenial(r, err)
	h.writeError(w, r, err)
}

// recordDenial logs, counts and audits a denial, as deny does, for a caller
// that answers it itself (the web view's pages). An error of the database
// (5xx) is no denial and is not recorded.
func (h *Handler) recordDenial(r *http.Request, err error) {
	ri := info(r)
	a := classify(err)
	if a.status >= 500 {
		return
	}
	actor := ri.actor
	var audited bool
	if actor == "" {
		actor = "anonymous"
		audited = h.anonymous.allowHost(r.RemoteAddr, time.Now())
	} else {
		audited = h.identified.allow(actor, time.Now())
	}
	h.log.Warn("request denied", "request_id", ri.id, "reason", a.body.Error, "status", a.status, "actor", actor,
		"method", r.Method, "path", r.URL.Path, "hint", a.body.Hint, "audited", audited)
	h.metrics.ObserveDenial(a.body.Error, audited)
	if ts, ok := h.engine.Store().(tenancy.TenantStore); ok && audited {
		e := &kilolock.AuditEntry{Actor: actor, Action: r.Method + " " + routeKind(r.URL.Path), Target: r.URL.Path, From: r.RemoteAddr, Denied: true, Reason: a.body.Error, RequestID: ri.id}
		if aerr := ts.AppendAudit(context.WithoutCancel(r.Context()), e); aerr != nil {
			h.log.Error("audit a denial", "request_id", ri.id, "err", aerr)
		}
	}
}

func routeKind(path string) string {
	switch {
	case strings.HasPrefix(path, "/v1/api/"):
		return "api"
	case strings.HasPrefix(path, webui.Prefix):
		return "ui"
	}
	return "state"
}

// credentials returns the secret a request carries: a Bearer token, or the
// password of basic auth with its username (the workspace id).
func credentials(r *http.Request) (user, secret string) {
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return "", strings.TrimSpace(auth[7:])
	}
	user, secret, _ = r.BasicAuth()
	return user, secret
}

// authorizeOperator admits the operator token to the JSON API.
func (h *Handler) authorizeOperator(r *http.Request) error {
	if h.operator == nil {
		return denial(http.StatusForbidden, "control_api_closed", "this server was started without an operator token: its control API is closed",
			"start kld with --operator-token klo_… (KL_OPERATOR_TOKEN), or manage tenancy on the database directly (kl --database …)")
	}
	_, secret := credentials(r)
	if secret == "" {
		return denial(http.StatusUnauthorized, "credentials_missing", "the API requires the operator token", "send Authorization: Bearer klo_… (kld --operator-token)")
	}
	if !h.operator.Equal(tenancy.HashSecret(secret)) {
		return denial(http.StatusUnauthorized, "credentials_invalid", "the credentials are not the operator token", "the API takes the operator token given to kld (--operator-token or KL_OPERATOR_TOKEN)")
	}
	return nil
}

// errOperatorOnState answers the operator token sent on a state's path:
// it opens the control API and reaches no state, so the answer names the
// tokens that do rather than calling it unknown.
func errOperatorOnState(wsID, envID string) error {
	return denial(http.StatusUnauthorized, "operator_token_on_state",
		"the operator token reaches the control API under /v1/api/, not states: a state's path takes a token of its environment",
		fmt.Sprintf("issue an automation token of the environment (kl token issue --env %s), or use a personal access token granted on it (kl pat create, kl grant add); the username stays the workspace id %s", envID, wsID))
}

// access is what a request of the authenticated lane does to its state.
type access int

const (
	accessRead     access = iota // GET, HEAD
	accessPlanLock               // a LOCK whose LockInfo says OperationTypePlan
	accessUnlock                 // UNLOCK, POST …/unlock, DELETE …/lock
	accessWrite                  // POST of a state, DELETE, any other LOCK
	accessOutputs                // GET …/outputs: the outputs alone
)

// readOnlyHint is what a read-scope token may do instead.
const readOnlyHint = "use a read-write token to apply; a read token reads the state and runs tofu plan (a plan's lock is a shared read lock)"

// planOperation is the Operation of the LockInfo tofu and terraform send
// when they lock for a plan.
const planOperation = "OperationTypePlan"

// classifyAccess says what r does. A LOCK's body is read (once: the
// handler reads it from lockBody too) to tell a plan's lock (a read:
// allowed under a lifecycle hold, so `tofu plan` works in a suspended
// workspace) from an apply's. A body that cannot be read is an apply's,
// and the handler answers why.
func (h *Handler) classifyAccess(r *http.Request, suffix string) access {
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && suffix == "/outputs":
		return accessOutputs
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return accessRead
	case r.Method == "UNLOCK" || (r.Method == http.MethodPost && suffix == "/unlock") || (r.Method == http.MethodDelete && suffix == "/lock"):
		return accessUnlock
	case r.Method == "LOCK" || (r.Method == http.MethodPost && suffix == "/lock"):
		body, err := h.lockBody(r)
		if err != nil {
			return accessWrite
		}
		var li kilolock.LockInfo
		if json.Unmarshal(body, &li) == nil && li.Operation == planOperation {
			return accessPlanLock
		}
	}
	return accessWrite
}

// authorizeState decides a request of the authenticated lane and rewrites
// it to the state's internal name. Everything it decides on comes from one
// store read (TenantStore.Access), so no change made before the request —
// a revoked token, a removed member, a hold — is missed.
func (h *Handler) authorizeState(r *http.Request) (*http.Request, error) {
	rest := strings.TrimPrefix(r.URL.Path, "/v1/states/")
	segs := strings.Split(rest, "/")
	suffix := ""
	if len(segs) == 4 && (segs[3] == "lock" || segs[3] == "unlock" || segs[3] == "outputs" || segs[3] == "quota") {
		suffix, segs = "/"+segs[3], segs[:3]
	}
	if len(segs) != 3 {
		return nil, denial(http.StatusUnauthorized, "auth_required", "this server requires credentials: the local lane /v1/states/{name} is not served",
			"use the authenticated path "+tenantPath+" with basic auth (username = workspace id, password = token) or Authorization: Bearer <token>")
	}
	wsID, envID, stateName := segs[0], segs[1], segs[2]
	ts, ok := h.engine.Store().(tenancy.TenantStore)
	if !ok {
		return nil, errors.New("auth: the store does not keep workspaces (tenancy.TenantStore)")
	}
	ctx := r.Context()
	user, secret := credentials(r)
	if secret == "" {
		return nil, denial(http.StatusUnauthorized, "credentials_missing", "the request carries no credentials",
			"send basic auth (username = workspace id, password = klt_ or klp_ token; TF_HTTP_USERNAME/TF_HTTP_PASSWORD) or Authorization: Bearer <token>")
	}
	if trust.LooksLikeIDToken(secret) {
		return h.authorizeWorkload(r, user, secret, wsID, envID, stateName, suffix) // workload.go
	}
	name, err := tenancy.TenantStateName(wsID, envID, stateName)
	if err != nil {
		name = "" // a malformed segment: decided below, once the token is known
	}
	req := tenancy.AccessRequest{Hash: tenancy.HashSecret(secret), WorkspaceID: wsID, Environment: envID, StateName: name}
	if h.operator != nil && h.operator.Equal(req.Hash) {
		info(r).actor = "operator"
		return nil, errOperatorOnState(wsID, envID)
	}
	// A segment no store could hold (a NUL byte, 100 KB) names nothing: it
	// is looked up as no id, and decided as an unknown one.
	if kilolock.ValidID("workspace", wsID) != nil {
		req.WorkspaceID = ""
	}
	if kilolock.ValidID("environment", envID) != nil {
		req.Environment = ""
	}
	a, err := ts.Access(ctx, req)
	if err != nil {
		return nil, err
	}
	ri := info(r)
	if a.Token != nil {
		ri.actor = tokenActor(a.Token)
	}
	// An unknown token is refused whatever it asks: its LOCK body is not
	// read, so that no one without a credential holds body memory.
	kind := accessWrite
	if a.Token != nil {
		kind = h.classifyAccess(r, suffix)
	}
	if err := decide(a, user, wsID, envID, kind, time.Now()); err != nil {
		return nil, err
	}
	if name == "" {
		// The segments name a reachable environment, so only the state
		// name can be wrong: say how.
		_, err := tenancy.TenantStateName(wsID, envID, stateName)
		return nil, err
	}
	tok := a.Token
	ri.readOnly = tok.Kind == tenancy.TokenAutomation && tok.Scope != tenancy.ScopeReadWrite
	// A read credential creates nothing, and a suspended workspace gets no
	// new state: their plans lock without leaving one behind.
	ri.noCreate = ri.readOnly || a.Workspace != nil && a.Workspace.Lifecycle == tenancy.LifecycleSuspended
	if tok.LastUsed.IsZero() || time.Since(tok.LastUsed) > touchEvery {
		if err := ts.TouchToken(ctx, tok.ID, time.Now()); err != nil {
			h.log.Warn("record token use", "request_id", ri.id, "err", err)
		}
	}
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = "/v1/states/"+name+suffix, ""
	return r2, nil
}

// tokenActor names a token in logs and the audit log; a PAT's requests
// are named as PAT-backed, with their user.
func tokenActor(t *tenancy.Token) string {
	if t.Kind == tenancy.TokenPersonal {
		return "pat:" + t.ID + " user:" + t.UserID
	}
	return t.ID
}

// decide is the authenticated lane's decision, at now, on a request that
// does kind to the state at wsID/envID, with basic-auth username user (""
// for a Bearer token). It returns nil when the request may go on.
//
// A scope the token cannot see answers 404 without telling whether it
// exists; a hint names what the token does reach. Entitlement and
// lifecycle denials answer 403 with their own codes.
func decide(a *tenancy.Access, user, wsID, envID string, kind access, now time.Time) error {
	tok := a.Token
	if tok == nil || tok.Kind == tenancy.TokenOperator {
		return denial(http.StatusUnauthorized, "credentials_invalid", "the token is unknown or revoked", "ask for a new token (kl token issue, kl pat create)")
	}
	if tok.Expired(now) {
		return denial(http.StatusUnauthorized, "credentials_expired", fmt.Sprintf("token %s expired at %s", tok.ID, tok.Expires.Format(time.RFC3339)),
			"ask for a new token (kl token issue, kl pat create); the expired one can be revoked (kl token revoke "+tok.ID+")")
	}
	if user != "" && user != wsID {
		return denial(http.StatusForbidden, "scope_mismatch", "the basic-auth username is not the workspace id of the path", "set the username (TF_HTTP_USERNAME) to the workspace id of the path")
	}
	switch tok.Kind {
	case tenancy.TokenAutomation:
		home := a.Home
		if home == nil { // its environment went with the token
			return denial(http.StatusUnauthorized, "credentials_invalid", "the token is unknown or revoked", "ask for a new token (kl token issue)")
		}
		if wsID != home.WorkspaceID {
			return denial(http.StatusNotFound, "workspace_not_found", "no workspace by that id is reachable with this token",
				fmt.Sprintf("this token belongs to /v1/states/%s/%s/{state_name}", home.WorkspaceID, home.PublicID))
		}
		if envID != home.PublicID {
			return envNotFound(envID, home)
		}
		if tok.Scope == tenancy.ScopeOutputs && kind != accessOutputs {
			return denial(http.StatusForbidden, "token_outputs_only", "the token's scope is outputs: it reads a state's outputs and nothing else",
				fmt.Sprintf("read the outputs at /v1/states/%s/%s/{state_name}/outputs (terraform_remote_state with backend \"http\" and that address); use a read or read-write token for the whole state", home.WorkspaceID, home.PublicID))
		}
		// A read token takes a plan's lock (a shared read lock; the store
		// refuses it anything else) and releases it.
		if tok.Scope != tenancy.ScopeReadWrite && kind != accessRead && kind != accessOutputs && kind != accessPlanLock && kind != accessUnlock {
			return denial(http.StatusForbidden, "token_read_only", "the token's scope is read: it cannot take an apply's lock or write", readOnlyHint)
		}
	case tenancy.TokenPersonal:
		if a.Workspace == nil || (!a.Member && !a.Granted) {
			return denial(http.StatusNotFound, "workspace_not_found", "no workspace by that id has you as a member",
				"check the workspace id (kl whoami --token <token> lists what the token reaches); an operator adds members (kl member add --workspace WS USER)")
		}
		if !a.Member {
			return denial(http.StatusForbidden, "membership_missing",
				fmt.Sprintf("user %s is no longer a member of workspace %s: the PAT's grants there give no access", tok.UserID, wsID),
				"access ends when a member leaves or is removed; an operator adds the user back (kl member add --workspace "+wsID+" "+tok.UserID+")")
		}
		env := a.Environment
		if env == nil || (env.PublicID != envID && !a.Granted) {
			return denial(http.StatusNotFound, "environment_not_found", "no environment by that id in the workspace",
				"use the environment's public id (env_…); kl whoami --token <token> lists the ones the token reaches")
		}
		if env.PublicID != envID {
			return envNotFound(envID, env)
		}
		if !a.Granted {
			return denial(http.StatusForbidden, "grant_missing", "this personal access token has no grant to the environment",
				"ask an operator to grant it: kl grant add "+tok.ID+" "+env.PublicID)
		}
	default:
		return denial(http.StatusUnauthorized, "credentials_invalid", "the token cannot reach states", "use an automation token (klt_) or a personal access token (klp_)")
	}
	if kind != accessWrite {
		return nil // reads, outputs, plan locks and unlocks are allowed under every hold
	}
	if a.Workspace.Lifecycle == tenancy.LifecycleSuspended {
		return denial(http.StatusForbidden, "workspace_suspended", "the workspace is suspended: it takes no writes or apply locks", "reads and plans still work; an operator resumes it (kl workspace resume)")
	}
	if a.State == tenancy.LifecycleArchived {
		return denial(http.StatusForbidden, "state_archived", "the state is archived: it takes no writes or apply locks", "reads and plans still work; an operator restores it (kl state restore)")
	}
	return nil
}

// envNotFound is the 404 of an environment path segment that is not the
// public id of env, which the caller may use: it names the public id.
func envNotFound(given string, env *tenancy.Environment) error {
	msg := "no environment by that id is reachable with this token"
	if given == env.Slug {
		msg = fmt.Sprintf("%q looks like an environment slug, not its public id", given)
	}
	return denial(http.StatusNotFound, "environment_not_found", msg,
		fmt.Sprintf("use the environment's public id %s: /v1/states/%s/%s/{state_name}", env.PublicID, env.WorkspaceID, env.PublicID))
}

// localName refuses, in AuthNone mode, a local-lane state name that has the
// form of a tenant's internal name, so that the lanes never share a state
// when a server later turns auth on.
func localName(path string) error {
	for _, prefix := range []string{"/v1/states/", "/v1/state-unlock/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			name, _, _ := strings.Cut(rest, "/")
			if strings.HasPrefix(name, "ws_") {
				return tenancy.LocalStateName(name)
			}
		}
	}
	return nil
}

// whoami answers GET /v1/whoami: what the token the request carries
// reaches (tenancy.Reach), for its holder — tofu prints only a status
// when the lane refuses it. An expired token is answered, marked expired.
func (h *Handler) whoami(w http.ResponseWriter, r *http.Request) error {
	if h.auth != AuthToken && !info(r).inProcess {
		return errTenancyDisabled
	}
	ts, ok := h.engine.Store().(tenancy.TenantStore)
	if !ok {
		return errors.New("whoami: the store does not keep workspaces (tenancy.TenantStore)")
	}
	_, secret := credentials(r)
	if secret == "" {
		h.deny(w, r, denial(http.StatusUnauthorized, "credentials_missing", "the request carries no token",
			"send the token as Authorization: Bearer <token> (kl --token), or as the basic-auth password"))
		return nil
	}
	if trust.LooksLikeIDToken(secret) {
		return h.whoamiWorkload(w, r, secret) // workload.go
	}
	reach, err := tenancy.NewControl(ts).Reach(r.Context(), tenancy.HashSecret(secret), time.Now())
	if errors.Is(err, kilolock.ErrNotFound) {
		h.deny(w, r, denial(http.StatusUnauthorized, "credentials_invalid", "the token is unknown or revoked (the operator token reaches the control API, not states)",
			"ask for a new token (kl token issue, kl pat create)"))
		return nil
	} else if err != nil {
		return err
	}
	info(r).actor = tokenActor(&reach.Token)
	writeJSON(w, http.StatusOK, reach)
	return nil
}

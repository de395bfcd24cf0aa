package httpbackend

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// Workload identity on the authenticated lane: a CI job sends its OIDC ID
// token as the basic-auth password (username: the workspace id) or as a
// Bearer token. The environment's trust policies, read from the store on
// every request (so a removed policy counts from the next one, on every
// replica), say whether it is accepted and with what scope; the Verifier
// checks it with keys it has cached, so no request waits on the issuer
// unless its keys are due for a refresh.

// errWorkloadOff answers an ID token on a server that verifies none.
var errWorkloadOff = denial(http.StatusUnauthorized, "credentials_invalid",
	"the credential is an OIDC ID token, but this server does not accept workload identity",
	"use an automation token (klt_…), or have the operator serve workload identity (kld --auth=token on a SQLite or PostgreSQL store) and add a trust policy (kl trust add)")

// authorizeWorkload decides a request of the authenticated lane that
// carries the ID token raw, as authorizeState does a token's: verified
// against the policies of the path's environment, then decided as an
// automation token of the accepting policy's scope would be. The request's
// actor is the identity (policy, sub and the job's claims), which the log,
// the audit log, a lock's holder and history's actor show.
func (h *Handler) authorizeWorkload(r *http.Request, user, raw, wsID, envID, stateName, suffix string) (*http.Request, error) {
	ps, ok := h.engine.Store().(trust.PolicyStore)
	if h.trust == nil || !ok {
		return nil, errWorkloadOff
	}
	ctx := r.Context()
	name, nameErr := tenancy.TenantStateName(wsID, envID, stateName)
	env := envID
	if kilolock.ValidID("environment", envID) != nil {
		env = "" // names no environment: no policy accepts the token
	}
	a, err := ps.TrustAccess(ctx, env, name)
	if err != nil {
		return nil, err
	}
	ri := info(r)
	id, err := h.trust.Verify(ctx, raw, a.Policies, stateName)
	if id != nil && errors.Is(err, trust.ErrCredentialsExpired) && h.finishesRun(r, suffix, name, id) {
		// CI tokens live minutes, an apply may take longer, and the CLI
		// sends the same password to its last write and its unlock.
		h.log.Warn("expired ID token finishing the run whose lock it holds", "request_id", ri.id, "actor", id.String(), "expired", id.Expires.UTC().Format(time.RFC3339))
		err = nil
	}
	if err != nil {
		var te *trust.Error
		if !errors.As(err, &te) {
			return nil, err
		}
		// The cause goes to the log only: it may quote the issuer's
		// answer. The token itself is never logged.
		kv := []any{"request_id", ri.id, "code", te.Code, "check", te.Check, "environment", env}
		if te.Claim != "" {
			kv = append(kv, "claim", te.Claim)
		}
		if te.Err != nil {
			kv = append(kv, "cause", te.Err.Error())
		}
		h.log.Warn("workload identity refused", kv...)
		return nil, denial(te.Status(), te.Code, te.Message, te.Hint)
	}
	ri.actor, ri.workload = id.String(), id.String()
	// The accepting policy stands where an automation token would: one
	// environment, one scope.
	acc := &tenancy.Access{
		Token:     &tenancy.Token{ID: id.Policy.ID, Kind: tenancy.TokenAutomation, EnvironmentID: id.Policy.EnvironmentID, Scope: id.Policy.Scope},
		Workspace: a.Workspace, Environment: a.Environment, Home: a.Environment, State: a.State,
	}
	if err := decide(acc, user, wsID, envID, h.classifyAccess(r, suffix), time.Now()); err != nil {
		return nil, err
	}
	if nameErr != nil {
		return nil, nameErr
	}
	ri.readOnly = id.Policy.Scope != tenancy.ScopeReadWrite
	ri.noCreate = ri.readOnly || a.Workspace.Lifecycle == tenancy.LifecycleSuspended
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = "/v1/states/"+name+suffix, ""
	return r2, nil
}

// expiredGrace bounds how long past its expiry a token may finish its run:
// the accepting policy's max TTL (1 h by default).
func expiredGrace(id *trust.Identity) time.Duration { return time.Duration(id.Policy.MaxTTL) }

// finishesRun reports whether r, carrying the expired token of identity
// id, only finishes the run it started, while id holds a lock of the state
// name (its holder is id: the same policy, subject, repository, ref and
// run) and the token expired no longer ago than expiredGrace: it writes
// under, or releases, that lock, naming its ID, or reads the state (the
// CLI reads it back before it saves). Taking a lock, or anything while id
// holds none, is never allowed with an expired token.
func (h *Handler) finishesRun(r *http.Request, suffix, name string, id *trust.Identity) bool {
	if name == "" || time.Since(id.Expires) > expiredGrace(id) {
		return false
	}
	var lockID string
	read := false
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && suffix == "":
		read = true
	case (r.Method == http.MethodPost || r.Method == http.MethodPut) && suffix == "":
		lockID = r.URL.Query().Get("ID")
	case r.Method == "UNLOCK" || (r.Method == http.MethodPost && suffix == "/unlock") || (r.Method == http.MethodDelete && suffix == "/lock"):
		body, err := h.lockBody(r)
		if err != nil {
			return false
		}
		var li kilolock.LockInfo
		if json.Unmarshal(body, &li) != nil {
			return false
		}
		lockID = li.ID
	}
	if lockID == "" && !read {
		return false
	}
	st, err := h.engine.Store().State(r.Context(), name)
	if err != nil {
		return false
	}
	for _, l := range st.Locks {
		if (read || l.Info.ID == lockID) && l.Info.Who == id.String() {
			return true
		}
	}
	return false
}

// whoamiWorkload answers GET /v1/whoami for an ID token: the environments
// whose policies accept it, as tenancy.Reach does a token's, its Token
// naming the identity and the accepting policy's scope. A token no policy
// accepts is refused as the lane would refuse it, with the first
// environment's reason.
func (h *Handler) whoamiWorkload(w http.ResponseWriter, r *http.Request, raw string) error {
	ps, ok := h.engine.Store().(trust.PolicyStore)
	if h.trust == nil || !ok {
		h.deny(w, r, errWorkloadOff)
		return nil
	}
	ctx := r.Context()
	all, err := ps.TrustPolicies(ctx, "")
	if err != nil {
		return err
	}
	var envs []string
	byEnv := map[string][]trust.Policy{}
	for _, p := range all {
		if byEnv[p.EnvironmentID] == nil {
			envs = append(envs, p.EnvironmentID)
		}
		byEnv[p.EnvironmentID] = append(byEnv[p.EnvironmentID], p)
	}
	reach := &tenancy.Reach{Environments: []tenancy.ReachableEnv{}}
	var refused error
	for _, env := range envs {
		id, err := h.trust.Verify(ctx, raw, byEnv[env], "")
		if err != nil {
			// An issuer's refusal is more telling than another
			// environment's unknown issuer.
			var te *trust.Error
			if refused == nil || errors.As(err, &te) && te.Check != trust.CheckIssuer {
				refused = err
			}
			continue
		}
		a, err := ps.TrustAccess(ctx, env, "")
		if err != nil {
			return err
		}
		if a.Environment == nil {
			continue // removed meanwhile
		}
		reach.Token = tenancy.Token{ID: id.String(), Kind: tenancy.TokenAutomation, EnvironmentID: env, Scope: id.Policy.Scope, Expires: id.Expires}
		re := tenancy.ReachableEnv{Environment: *a.Environment, Path: "/v1/states/" + a.Workspace.ID + "/" + env + "/{state_name}",
			Writable: id.Policy.Scope == tenancy.ScopeReadWrite && a.Workspace.Lifecycle == tenancy.LifecycleActive, OutputsOnly: id.Policy.Scope == tenancy.ScopeOutputs}
		if re.OutputsOnly {
			re.Path += "/outputs"
		}
		reach.Environments = append(reach.Environments, re)
		info(r).actor = id.String()
	}
	if len(reach.Environments) == 0 {
		var te *trust.Error
		if errors.As(refused, &te) {
			h.deny(w, r, denial(te.Status(), te.Code, te.Message, te.Hint))
			return nil
		} else if refused != nil {
			return refused
		}
		h.deny(w, r, denial(http.StatusUnauthorized, "credentials_invalid", "no trust policy accepts ID tokens yet", "have the operator add one (kl trust add)"))
		return nil
	}
	writeJSON(w, http.StatusOK, reach)
	return nil
}

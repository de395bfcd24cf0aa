package httpbackend

import (
	"errors"
	"net/http"
	"time"

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
	name, nameErr := kilolock.TenantStateName(wsID, envID, stateName)
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
	acc := &kilolock.Access{
		Token:     &kilolock.Token{ID: id.Policy.ID, Kind: kilolock.TokenAutomation, EnvironmentID: id.Policy.EnvironmentID, Scope: id.Policy.Scope},
		Workspace: a.Workspace, Environment: a.Environment, Home: a.Environment, State: a.State,
	}
	if err := decide(acc, user, wsID, envID, h.classifyAccess(r, suffix), time.Now()); err != nil {
		return nil, err
	}
	if nameErr != nil {
		return nil, nameErr
	}
	ri.readOnly = id.Policy.Scope != kilolock.ScopeReadWrite
	ri.noCreate = ri.readOnly || a.Workspace.Lifecycle == kilolock.LifecycleSuspended
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = "/v1/states/"+name+suffix, ""
	return r2, nil
}

// whoamiWorkload answers GET /v1/whoami for an ID token: the environments
// whose policies accept it, as kilolock.Reach does a token's, its Token
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
	reach := &kilolock.Reach{Environments: []kilolock.ReachableEnv{}}
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
		reach.Token = kilolock.Token{ID: id.String(), Kind: kilolock.TokenAutomation, EnvironmentID: env, Scope: id.Policy.Scope, Expires: id.Expires}
		re := kilolock.ReachableEnv{Environment: *a.Environment, Path: "/v1/states/" + a.Workspace.ID + "/" + env + "/{state_name}",
			Writable: id.Policy.Scope == kilolock.ScopeReadWrite && a.Workspace.Lifecycle == kilolock.LifecycleActive, OutputsOnly: id.Policy.Scope == kilolock.ScopeOutputs}
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

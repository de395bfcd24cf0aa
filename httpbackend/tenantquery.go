package httpbackend

import (
	"net/http"
	"strings"

	"github.com/kilolock/kilolock/tenancy"
)

// operatorCredential reports whether r carries the operator token (or a
// secret that looks like one, which authorizeOperator then decides).
func (h *Handler) operatorCredential(r *http.Request) bool {
	_, secret := credentials(r)
	return secret == "" || strings.HasPrefix(secret, tenancy.TokenOperator.Prefix()) ||
		(h.operator != nil && h.operator.Equal(tenancy.HashSecret(secret)))
}

// authorizeTenantQuery admits an automation token or a PAT to
// POST /v1/api/query with the scope of the environments whose states a
// GET on the backend lane would let it read, each confirmed by the lane's
// decision (as the web view's are): a read or read-write token's own
// environment, a PAT's granted ones while its user is a member. An
// outputs-scope token reads no resources, so it may not query.
func (h *Handler) authorizeTenantQuery(r *http.Request) (*tenancy.QueryScope, error) {
	_, secret := credentials(r)
	v, err := uiGate{h}.Viewer(r, secret)
	if err != nil {
		return nil, err
	}
	info(r).actor = v.Actor
	if len(v.Environments) == 0 {
		return nil, denial(http.StatusForbidden, "query_scope_empty", "the token reads no environment's states, so it has nothing to query",
			"an outputs token reads outputs only; query with a read or read-write token, or a PAT with a grant (kl whoami --token … shows what a token reaches)")
	}
	envs := make([]tenancy.Environment, len(v.Environments))
	for i, e := range v.Environments {
		envs[i] = tenancy.Environment{WorkspaceID: e.WorkspaceID, PublicID: e.PublicID}
	}
	scope := tenancy.ScopeOf(envs)
	return &scope, nil
}

package httpbackend

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
)

// authorizeTenantRead admits an automation token or a PAT to the API's
// reads of one state (GET /v1/api/states/{name}/…: status, history, show,
// diff, graph, export, …), so that a tenant runs kl's read commands with
// its own token. The state is named as the tenant knows it: NAME, within
// the one environment the credential reads (an automation token's own),
// or the internal ws_….env_….NAME. Each read is the backend lane's
// decision on a GET of that state, as the web view's are; the request goes
// on rewritten to the internal name.
func (h *Handler) authorizeTenantRead(r *http.Request) (*http.Request, error) {
	rest := strings.TrimPrefix(r.URL.Path, "/v1/api/states/")
	name, suffix, _ := strings.Cut(rest, "/")
	_, secret := credentials(r)
	gate := uiGate{h}
	internal := name
	if _, _, _, ok := tenancy.SplitTenantStateName(name); !ok {
		v, err := gate.Viewer(r, secret)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, env := range v.Environments {
			if n, err := tenancy.TenantStateName(env.WorkspaceID, env.PublicID, name); err == nil {
				names = append(names, n)
			}
		}
		switch len(names) {
		case 0:
			if err := kilolock.ValidStateName(name); err != nil {
				return nil, err
			}
			return nil, denial(http.StatusForbidden, "read_scope_empty", "the token reads no environment's states",
				"an outputs token reads outputs only, at the backend path; use a read or read-write token, or a PAT with a grant (kl whoami --token … shows what a token reaches)")
		case 1:
			internal = names[0]
		default:
			return nil, denial(http.StatusBadRequest, "state_name_ambiguous",
				fmt.Sprintf("the token reads %d environments: %s names a state in each", len(names), name),
				"name the state with its environment: "+strings.Join(names, " or "))
		}
	}
	if err := gate.Read(r, secret, internal); err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = "/v1/api/states/"+internal, ""
	if suffix != "" {
		r2.URL.Path += "/" + suffix
	}
	return r2, nil
}

// operatorShortName answers the operator's read of a state by a short name
// that names no state but does end a tenant's internal name: 404 with the
// full names to use (the operator reaches every tenant, so it must say
// which). nil lets the request go on: the name exists, names no tenant's
// state, or is an internal name already.
func (h *Handler) operatorShortName(r *http.Request) error {
	rest := strings.TrimPrefix(r.URL.Path, "/v1/api/states/")
	name, _, _ := strings.Cut(rest, "/")
	if name == "" || kilolock.ValidStateName(name) != nil {
		return nil
	}
	if _, _, _, ok := tenancy.SplitTenantStateName(name); ok {
		return nil
	}
	ctx := r.Context()
	if _, err := h.engine.Store().State(ctx, name); !errors.Is(err, kilolock.ErrNotFound) {
		return nil
	}
	states, err := h.engine.States(ctx)
	if err != nil {
		return nil
	}
	var matches []string
	for _, st := range states {
		if _, _, short, ok := tenancy.SplitTenantStateName(st.Name); ok && short == name {
			matches = append(matches, st.Name)
		}
	}
	if len(matches) == 0 {
		return nil
	}
	const most = 5
	shown := matches[:min(len(matches), most)]
	hint := "the operator names a tenant's state in full: " + strings.Join(shown, " or ")
	if len(matches) > most {
		hint += fmt.Sprintf(" (and %d more: kl states)", len(matches)-most)
	}
	return denial(http.StatusNotFound, "state_not_found", fmt.Sprintf("no state %s: a tenant's state is named ws_….env_….%s", name, name), hint)
}

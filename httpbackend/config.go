package httpbackend

import (
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

type stateConfig = client.StateConfig

type configAnswer = client.ConfigAnswer

// setConfig answers POST /v1/api/states/{name}/config. Setting the lock
// mode creates a missing state (so a state can be made optimistic before
// its first apply) and is refused with 409 locks_held, naming the holders,
// while anyone holds a lock: nothing is changed then.
func (h *Handler) setConfig(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var c stateConfig
	if err := decodeJSON(body, &c); err != nil {
		return err
	}
	if c.ExclusiveLocks == nil && c.AllowLineageChange == nil && c.SharedPlanLocks == nil && c.RequireClientEncryption == nil {
		return &kilolock.InvalidError{Code: "no_setting", Message: "the body changes no setting", Hint: `send e.g. {"exclusive_locks": false}, {"allow_lineage_change": true}, {"shared_plan_locks": false} or {"require_client_encryption": true}`}
	}
	ctx := r.Context()
	kv := []any{"state", name, "request_id", info(r).id}
	// The lock mode first: it is the one that may be refused, and then
	// nothing at all has changed.
	if c.ExclusiveLocks != nil {
		mode := kilolock.LockOptimistic
		if *c.ExclusiveLocks {
			mode = kilolock.LockExclusive
		}
		if err := h.engine.SetLockMode(ctx, name, mode); err != nil {
			return err
		}
		kv = append(kv, "lock_mode", mode)
	}
	if c.AllowLineageChange != nil {
		if err := h.engine.SetAllowLineageChange(ctx, name, *c.AllowLineageChange); err != nil {
			return err
		}
		kv = append(kv, "allow_lineage_change", *c.AllowLineageChange)
	}
	if c.SharedPlanLocks != nil {
		if err := h.engine.SetSharedPlanLocks(ctx, name, c.SharedPlanLocks); err != nil {
			return err
		}
		kv = append(kv, "shared_plan_locks", *c.SharedPlanLocks)
	}
	if c.RequireClientEncryption != nil {
		if err := h.engine.SetRequireClientEncryption(ctx, name, *c.RequireClientEncryption); err != nil {
			return err
		}
		kv = append(kv, "require_client_encryption", *c.RequireClientEncryption)
	}
	h.log.Warn("state config changed", kv...)
	st, err := h.engine.Store().State(ctx, name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &configAnswer{
		OK: true, State: name, LockMode: st.LockMode,
		ExclusiveLocks: st.LockMode != kilolock.LockOptimistic, AllowLineageChange: st.AllowLineageChange,
		SharedPlanLocks:         kilolock.SharedPlanLocks(st, h.engine.SharedPlans()),
		RequireClientEncryption: st.RequireClientEncryption, EnvironmentRequiresClientEncryption: st.EnvironmentRequiresClientEncryption,
	})
	return nil
}

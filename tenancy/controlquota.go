package tenancy

import (
	"context"
	"fmt"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/quota"
)

// QuotaChange is a limit to set on a target, or to clear from it, as kl
// quota set and the API (client.SetQuota) name it.
type QuotaChange struct {
	kilolock.QuotaTarget
	// Workspace, when set, is the workspace an environment target must
	// belong to.
	Workspace string `json:"workspace,omitempty"`
	// Limit is the limit to set; nil clears the target's own, so that it
	// inherits again.
	Limit *quota.Limit `json:"limit,omitempty"`
}

func invalidQuota(msg string) error {
	return &kilolock.InvalidError{Code: "invalid_quota", Message: msg,
		Hint: "give a state (its name), an environment (env_…) or a workspace's default for its states or environments, and --soft N --hard M (0 <= soft <= hard; soft 0: none) or --unlimited; --clear to inherit again"}
}

// SetQuota sets the limit of ch's target, or clears it (ch.Limit nil).
// A state is named as the lanes name it (a tenant's internal name,
// TenantStateName); its environment, an environment and a workspace must
// exist (ErrNotFound); a state need not. An invalid scope, target or
// limit is an *InvalidError (invalid_quota). It takes effect on the next
// commit. Audited as quota.set or quota.clear, on "SCOPE TARGET (LIMIT)".
func (c *Control) SetQuota(ctx context.Context, by kilolock.Caller, ch QuotaChange) error {
	qs, ok := c.store.(kilolock.QuotaStore)
	if !ok {
		return quotasUnsupported()
	}
	if err := c.validQuotaTarget(ctx, ch); err != nil {
		return err
	}
	action, target := "quota.clear", ch.QuotaTarget.String()
	if ch.Limit != nil {
		if err := ch.Limit.Validate(); err != nil {
			return invalidQuota(err.Error())
		}
		action, target = "quota.set", target+" ("+ch.Limit.String()+")"
	}
	if err := qs.SetQuota(ctx, ch.QuotaTarget, ch.Limit); err != nil {
		return err
	}
	return c.audit(ctx, by, action, target)
}

// validQuotaTarget checks ch's target: well formed, and what it names
// there.
func (c *Control) validQuotaTarget(ctx context.Context, ch QuotaChange) error {
	t := ch.QuotaTarget
	if ch.Workspace != "" && t.Scope != kilolock.QuotaEnvironment {
		return invalidQuota("a workspace is given with an environment target only")
	}
	switch t.Scope {
	case kilolock.QuotaState:
		if err := kilolock.ValidStateName(t.Target); err != nil {
			return err
		}
		if ws, env, _, tenant := SplitTenantStateName(t.Target); tenant {
			_, err := c.environmentOf(ctx, ws, env)
			return err
		}
		return LocalStateName(t.Target)
	case kilolock.QuotaEnvironment:
		if err := kilolock.ValidID("environment", t.Target); err != nil {
			return err
		}
		e, err := c.store.Environment(ctx, t.Target)
		if err != nil {
			return environmentNotFound(err, t.Target)
		}
		if ch.Workspace != "" && e.WorkspaceID != ch.Workspace {
			return environmentNotFound(fmt.Errorf("environment %q in workspace %q: %w", t.Target, ch.Workspace, kilolock.ErrNotFound), t.Target)
		}
		return nil
	case kilolock.QuotaWorkspaceStates, kilolock.QuotaWorkspaceEnvironments:
		if err := kilolock.ValidID("workspace", t.Target); err != nil {
			return err
		}
		_, err := c.store.Workspace(ctx, t.Target)
		return workspaceNotFound(err, t.Target)
	}
	return invalidQuota(fmt.Sprintf("%s is not a quota scope: use state, environment, workspace_states or workspace_environments", kilolock.Clip(string(t.Scope))))
}

// environmentOf returns environment env of workspace ws. ErrNotFound when
// there is none.
func (c *Control) environmentOf(ctx context.Context, ws, env string) (*Environment, error) {
	if err := kilolock.ValidID("workspace", ws); err != nil {
		return nil, err
	}
	if err := kilolock.ValidID("environment", env); err != nil {
		return nil, err
	}
	e, err := c.store.Environment(ctx, env)
	if err == nil && e.WorkspaceID != ws {
		err = fmt.Errorf("environment %q in workspace %q: %w", env, ws, kilolock.ErrNotFound)
	}
	if err != nil {
		return nil, explain(err, kilolock.ErrNotFound, "environment_not_found", fmt.Sprintf("workspace %s has no environment %q", ws, env), "use the environment's public id (env_…); kl env list --workspace "+ws+" shows them")
	}
	return e, nil
}

// Quotas lists the limits set, by scope and target.
func (c *Control) Quotas(ctx context.Context) ([]kilolock.QuotaSetting, error) {
	qs, ok := c.store.(kilolock.QuotaStore)
	if !ok {
		return nil, quotasUnsupported()
	}
	return qs.Quotas(ctx)
}

// quotasUnsupported is the answer of a store that keeps no quotas.
func quotasUnsupported() error {
	return &kilolock.InvalidError{Code: "quotas_unsupported", Message: "this store keeps no quotas", Hint: "use the SQLite or PostgreSQL store"}
}

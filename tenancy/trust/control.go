package trust

import (
	"context"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
)

// Control manages trust policies for the operator: the control API and
// kl --database both run through it, so a policy is validated and audited
// the same whichever way it comes. Changes are audited as trust.add and
// trust.remove on the policy's id (the entry's target also names the
// environment), reads are not.
type Control struct {
	store   PolicyStore
	tenants tenancy.TenantStore
}

// ErrUnsupported is returned by NewControl for a store that keeps no
// trust policies.
var ErrUnsupported = errors.New("the store keeps no trust policies")

// NewControl returns a Control over s, which must keep tenants
// (tenancy.TenantStore) and trust policies (PolicyStore); otherwise
// ErrUnsupported.
func NewControl(s kilolock.Store) (*Control, error) {
	ps, ok := s.(PolicyStore)
	ts, ok2 := s.(tenancy.TenantStore)
	if !ok || !ok2 {
		return nil, ErrUnsupported
	}
	return &Control{store: ps, tenants: ts}, nil
}

// Add validates p (see NewPolicy: its ID and Created are set here),
// stores it and returns it. An invalid policy is a *kilolock.InvalidError;
// a missing environment a *kilolock.ControlError environment_not_found.
// Audited as trust.add.
func (c *Control) Add(ctx context.Context, by kilolock.Caller, p Policy) (*Policy, error) {
	np, err := NewPolicy(p)
	if err != nil {
		return nil, err
	}
	if err := c.store.CreateTrustPolicy(ctx, np); err != nil {
		if errors.Is(err, kilolock.ErrNotFound) {
			return nil, &kilolock.ControlError{Err: kilolock.ErrNotFound, Code: "environment_not_found",
				Message: fmt.Sprintf("there is no environment %q", np.EnvironmentID),
				Hint:    "use the environment's public id (env_…); kl env list --workspace WS shows them"}
		}
		return nil, err
	}
	return np, c.audit(ctx, by, "trust.add", np.ID+" env:"+np.EnvironmentID+" iss:"+np.Issuer)
}

// Policies lists the policies of environment env by id, every policy when
// env is empty.
func (c *Control) Policies(ctx context.Context, env string) ([]Policy, error) {
	if env != "" {
		if err := kilolock.ValidID("environment", env); err != nil {
			return nil, err
		}
	}
	return c.store.TrustPolicies(ctx, env)
}

// Remove removes policy id: the next request bearing a token only it
// accepted is refused (401). A missing policy is a *kilolock.ControlError
// trust_policy_not_found. Audited as trust.remove.
func (c *Control) Remove(ctx context.Context, by kilolock.Caller, id string) error {
	if err := kilolock.ValidID("trust policy", id); err != nil {
		return err
	}
	if err := c.store.DeleteTrustPolicy(ctx, id); err != nil {
		if errors.Is(err, kilolock.ErrNotFound) {
			return &kilolock.ControlError{Err: kilolock.ErrNotFound, Code: "trust_policy_not_found",
				Message: fmt.Sprintf("there is no trust policy %q", id), Hint: "kl trust list shows the policies"}
		}
		return err
	}
	return c.audit(ctx, by, "trust.remove", id)
}

// audit records a change once it is made, even when ctx is cancelled.
func (c *Control) audit(ctx context.Context, by kilolock.Caller, action, target string) error {
	actor := by.Actor
	if actor == "" {
		actor = "anonymous"
	}
	e := &kilolock.AuditEntry{Actor: actor, Action: action, Target: target, From: by.From, RequestID: by.RequestID}
	if err := c.tenants.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

package trust

import (
	"context"

	"github.com/kilolock/kilolock/tenancy"
)

// PolicyStore is the optional capability of a kilolock.Store that keeps
// trust policies beside its workspaces and environments (the SQLite and
// PostgreSQL stores do), so that every kld replica on one database sees
// the same policies. Find it with a type assertion: s.(trust.PolicyStore).
//
// Methods return kilolock.ErrNotFound (wrapped) for a missing policy or
// environment and kilolock.ErrConflict for a policy id already taken.
type PolicyStore interface {
	// CreateTrustPolicy stores p as it is (Validate has passed).
	// ErrNotFound when its environment is missing; ErrConflict when its
	// id is taken.
	CreateTrustPolicy(ctx context.Context, p *Policy) error
	// TrustPolicies lists the policies of the environment environmentID
	// by id, or every policy when environmentID is empty; an empty list
	// when there is none.
	TrustPolicies(ctx context.Context, environmentID string) ([]Policy, error)
	// DeleteTrustPolicy removes a policy. ErrNotFound when missing.
	DeleteTrustPolicy(ctx context.Context, id string) error
	// TrustAccess reads, in one read transaction (one snapshot), what a
	// request of the authenticated lane that carries an ID token is
	// decided on: the environment of public id environmentID, its
	// workspace, the hold of the state of internal name state and the
	// environment's policies. A missing environment is no error:
	// Access.Environment is nil and there are no policies.
	TrustAccess(ctx context.Context, environmentID, state string) (*Access, error)
}

// Access is what a request carrying an ID token is decided on, read by a
// PolicyStore in one snapshot: a policy removed before the request counts
// from that very request.
type Access struct {
	Environment *tenancy.Environment // nil when there is none by that id
	Workspace   *tenancy.Workspace   // the environment's
	State       tenancy.Lifecycle    // the state's hold, LifecycleActive when none
	Policies    []Policy             // the environment's, by id
}

package kilolock

import (
	"context"
	"fmt"
	"time"

	"github.com/kilolock/kilolock/quota"
)

// QuotaScope names what a limit is set on.
type QuotaScope string

// Scopes of limits. A state's limit is its own, else its workspace's
// per-state default, else the server's default (Options.DefaultStateQuota);
// an environment's is its own, else its workspace's per-environment
// default. The first one set wins, an explicit unlimited included; none
// set is unlimited.
const (
	// QuotaState is one state, by its name (a tenant's internal name,
	// TenantStateName, on the authenticated lane).
	QuotaState QuotaScope = "state"
	// QuotaEnvironment is an environment, by public id: the sum of its
	// active states (archived ones do not count).
	QuotaEnvironment QuotaScope = "environment"
	// QuotaWorkspaceStates is, by workspace id, the default limit of each
	// state of the workspace's environments.
	QuotaWorkspaceStates QuotaScope = "workspace_states"
	// QuotaWorkspaceEnvironments is, by workspace id, the default limit of
	// each of the workspace's environments.
	QuotaWorkspaceEnvironments QuotaScope = "workspace_environments"
)

// Valid reports whether s is one of the scopes.
func (s QuotaScope) Valid() bool {
	switch s {
	case QuotaState, QuotaEnvironment, QuotaWorkspaceStates, QuotaWorkspaceEnvironments:
		return true
	}
	return false
}

// QuotaTarget is where a limit is set: a scope and the name or id of what
// it limits.
type QuotaTarget struct {
	Scope  QuotaScope `json:"scope"`
	Target string     `json:"target"`
}

func (t QuotaTarget) String() string { return string(t.Scope) + " " + t.Target }

// QuotaSetting is a limit set on a target.
type QuotaSetting struct {
	QuotaTarget
	Limit   quota.Limit `json:"limit"`
	Updated time.Time   `json:"updated"`
}

// Where a counted scope's limit comes from (QuotaCount.From).
const (
	LimitFromState       = "state"             // the state's own
	LimitFromEnvironment = "environment"       // the environment's own
	LimitFromWorkspace   = "workspace_default" // the workspace's default for its states or environments
	LimitFromServer      = "server_default"    // kld --default-state-quota
	LimitFromNone        = "none"              // nothing set: unlimited
)

// QuotaCount is one scope counted against its limit, and where that limit
// comes from.
type QuotaCount struct {
	quota.Verdict
	From string `json:"from"`
}

// QuotaFacts are what a store reads to count a state and its environment:
// the limits set on every scope that may apply and the managed instances
// of each. Stores read them in the commit's transaction (the environment's
// row locked first) and decide with Count, so that two replicas decide
// alike.
type QuotaFacts struct {
	State    string
	Managed  int64 // the state's managed instances now
	Archived bool  // an archived state is not in its environment's sum
	// StateLimit, WorkspaceStates and ServerDefault are the limits that may
	// apply to the state, nearest first; nil when not set.
	StateLimit, WorkspaceStates, ServerDefault *quota.Limit
	// Environment is the state's environment (public id) when its name is a
	// tenant's (SplitTenantStateName) and the environment exists.
	Environment string
	// EnvironmentManaged is the sum of the managed instances of the
	// environment's active states, this one's included when active.
	EnvironmentManaged int64
	// EnvironmentLimit and WorkspaceEnvironments may apply to the
	// environment, nearest first.
	EnvironmentLimit, WorkspaceEnvironments *quota.Limit
}

// Count counts the state and, when it is an active state of an
// environment, the environment, for a change that adds delta managed
// instances to the state (quota.Check decides each).
func (f *QuotaFacts) Count(delta int64) []QuotaCount {
	limit, from := resolveLimit([]*quota.Limit{f.StateLimit, f.WorkspaceStates, f.ServerDefault}, []string{LimitFromState, LimitFromWorkspace, LimitFromServer})
	counts := []QuotaCount{{Verdict: quota.Check(quota.ScopeState, f.State, f.Managed, delta, limit), From: from}}
	if f.Environment != "" && !f.Archived {
		limit, from := resolveLimit([]*quota.Limit{f.EnvironmentLimit, f.WorkspaceEnvironments}, []string{LimitFromEnvironment, LimitFromWorkspace})
		counts = append(counts, QuotaCount{Verdict: quota.Check(quota.ScopeEnvironment, f.Environment, f.EnvironmentManaged, delta, limit), From: from})
	}
	return counts
}

// CountRestore counts the environment of archived state f.State as
// restoring it would leave it: its active states and this one's Managed
// instances added (nil when the state is not archived, or has no
// environment: restoring it changes no count).
func (f *QuotaFacts) CountRestore() []QuotaCount {
	if f.Environment == "" || !f.Archived {
		return nil
	}
	limit, from := resolveLimit([]*quota.Limit{f.EnvironmentLimit, f.WorkspaceEnvironments}, []string{LimitFromEnvironment, LimitFromWorkspace})
	return []QuotaCount{{Verdict: quota.Check(quota.ScopeEnvironment, f.Environment, f.EnvironmentManaged, f.Managed, limit), From: from}}
}

// CheckRestore refuses restoring archived state when counts (CountRestore)
// say it would grow its environment past a hard limit: a *QuotaError
// whose Restore is set.
func CheckRestore(state string, counts []QuotaCount) error {
	err := CheckQuota(state, counts)
	if qe, ok := err.(*QuotaError); ok {
		qe.Restore = true
	}
	return err
}

func resolveLimit(ls []*quota.Limit, from []string) (quota.Limit, string) {
	for i, l := range ls {
		if l != nil {
			return *l, from[i]
		}
	}
	return quota.Limit{Unlimited: true}, LimitFromNone
}

// CheckQuota refuses the change counts were counted for when one of them
// refuses it: a *QuotaError naming the first such scope.
func CheckQuota(state string, counts []QuotaCount) error {
	for _, c := range counts {
		if c.Refused() {
			return &QuotaError{State: state, Refused: c, Counts: counts}
		}
	}
	return nil
}

// Warnings are the counts that warn: above a soft limit, or above a hard
// one without growing.
func Warnings(counts []QuotaCount) []QuotaCount {
	var out []QuotaCount
	for _, c := range counts {
		if c.Level == quota.Warn {
			out = append(out, c)
		}
	}
	return out
}

// QuotaError is a commit (or a plan's admission) refused because it would
// grow a state, or its environment, past a hard limit. Nothing was
// written.
type QuotaError struct {
	State   string
	Refused QuotaCount   // the scope that refused it
	Counts  []QuotaCount // every scope counted
	// Admission marks the refusal of a plan's admission (QuotaStatus with
	// a delta), before anything was applied.
	Admission bool
	// Restore marks the refusal of restoring an archived state, whose
	// managed instances its environment would count again.
	Restore bool
}

func (e *QuotaError) Error() string {
	if r := e.Refused; e.Restore {
		return fmt.Sprintf("restoring state %s would bring environment %s from %d to %d managed instances (the state holds %d), past its hard limit of %d%s",
			e.State, r.Target, r.Current, r.Result, r.Result-r.Current, r.Limit.Hard, limitNote(r))
	}
	return e.Refused.Message()
}

// limitNote is where a refused count's limit comes from, and its soft
// limit.
func limitNote(c QuotaCount) string {
	note := " (limit from " + c.From
	if c.Limit.Soft > 0 {
		note += fmt.Sprintf(", soft %d", c.Limit.Soft)
	}
	return note + ")"
}

// Is makes errors.Is(err, ErrQuotaExceeded) true.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// Hint says what to do next.
func (e *QuotaError) Hint() string {
	c := e.Refused
	if e.Restore {
		return fmt.Sprintf("the state stays archived: make room for its %d managed instances first (destroy resources or archive another state of environment %s), or have an operator raise the limit (kl quota set --env %s --soft N --hard M); kl quota remaining --state on an active state of it shows the headroom",
			c.Result-c.Current, c.Target, c.Target)
	}
	lead := "nothing was stored"
	if e.Admission {
		lead = "applying this plan would be refused"
	}
	if c.Scope == quota.ScopeEnvironment {
		return fmt.Sprintf("%s: the active states of environment %s may hold %d managed instances together (limit from %s); destroy resources or archive a state of it, or have an operator raise it (kl quota set --env %s --soft N --hard M); kl quota remaining --state %s shows the headroom",
			lead, c.Target, c.Limit.Hard, c.From, c.Target, e.State)
	}
	return fmt.Sprintf("%s: state %s may hold %d managed instances (limit from %s); plan fewer resources or destroy some first, or have an operator raise it (kl quota set --state %s --soft N --hard M); kl quota remaining --state %s shows the headroom",
		lead, e.State, c.Limit.Hard, c.From, e.State, e.State)
}

// QuotaEvent is a quota's refusal of a commit, or its warning on one,
// kept so that users can see why a client that prints only "HTTP error:
// 403" failed (kl quota status).
type QuotaEvent struct {
	ID      int64     `json:"id"`
	State   string    `json:"state"`
	Created time.Time `json:"created"`
	quota.Verdict
	From string `json:"from"`
	// Version is the version a warned commit made; 0 for a refusal.
	Version int64  `json:"version,omitempty"`
	LockID  string `json:"lock_id,omitempty"`
	Actor   string `json:"actor,omitempty"`
}

// Describe says the event in one line, its time aside: its message, then
// the version a warned commit made (or that nothing was written), who
// wrote and under which lock.
func (e *QuotaEvent) Describe() string {
	s := e.Message()
	if e.Version > 0 {
		s += fmt.Sprintf(" (version %d", e.Version)
	} else {
		s += " (nothing was written"
	}
	if e.Actor != "" {
		s += ", by " + e.Actor
	}
	if e.LockID != "" {
		s += ", lock " + e.LockID
	}
	return s + ")"
}

// QuotaStatus is how a state and its environment stand against their
// limits, now or after a change of Delta managed instances: what kl quota
// remaining and kl quota check show.
type QuotaStatus struct {
	State       string `json:"state"`
	Environment string `json:"environment,omitempty"`
	// Exists is false for a state with no version yet: it counts 0.
	Exists   bool  `json:"exists"`
	Archived bool  `json:"archived,omitempty"`
	Delta    int64 `json:"delta"`
	// Level is the worst of Counts' levels.
	Level         quota.Level  `json:"level"`
	Counts        []QuotaCount `json:"counts"`
	LatestRefusal *QuotaEvent  `json:"latest_refusal,omitempty"`
	LatestWarning *QuotaEvent  `json:"latest_warning,omitempty"`
}

// QuotaStore is the optional capability of a Store that keeps limits and
// enforces them in Commit: a commit that adds managed instances (counted
// from its own changes, quota.Counts) is refused with a *QuotaError, and
// nothing written, when it would grow the state or its environment past a
// hard limit; the environment's row is locked first, so that two commits
// to states of one environment cannot both pass its limit. A commit that
// adds none is never refused. Commit.DefaultQuota is the server's default
// state limit. Find it with a type assertion: s.(QuotaStore).
type QuotaStore interface {
	// SetQuota sets the limit of t, or clears it (nil): clearing a limit
	// that is not set is no error. The caller validates t and l (Control
	// does).
	SetQuota(ctx context.Context, t QuotaTarget, l *quota.Limit) error
	// Quotas lists the limits set, by scope and target.
	Quotas(ctx context.Context) ([]QuotaSetting, error)
	// QuotaStatus counts state name and its environment as a commit
	// adding delta managed instances would, with def the server's default
	// state limit, and returns the state's latest refusal and warning. It
	// takes no lock. A state that does not exist counts 0 (Exists false).
	QuotaStatus(ctx context.Context, name string, delta int64, def *quota.Limit) (*QuotaStatus, error)
	// RecordQuotaRefusal keeps a refused commit of state name (e.Version
	// 0), setting e.ID, e.State and e.Created. ErrNotFound when the state
	// does not exist.
	RecordQuotaRefusal(ctx context.Context, name string, e *QuotaEvent) error
}

// quotaStore returns the engine's store as a QuotaStore.
func (e *Engine) quotaStore() (QuotaStore, error) {
	qs, ok := e.store.(QuotaStore)
	if !ok {
		return nil, quotasUnsupported()
	}
	return qs, nil
}

// QuotaStatus counts a state and its environment against their limits:
// as they stand (delta 0), or as a change adding delta managed instances
// (quota.PlanDelta of a plan) would leave them, with the state's latest
// refusal and warning. When delta would grow a scope past its hard limit
// it returns the status and a *QuotaError: the plan's admission is
// refused, as its commit would be.
func (e *Engine) QuotaStatus(ctx context.Context, name string, delta int64) (*QuotaStatus, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	if delta > quota.MaxLimit || delta < -quota.MaxLimit {
		return nil, &InvalidError{Code: "invalid_delta", Message: fmt.Sprintf("a delta of %d managed instances is out of range", delta), Hint: fmt.Sprintf("give a delta between %d and %d", -int64(quota.MaxLimit), int64(quota.MaxLimit))}
	}
	qs, err := e.quotaStore()
	if err != nil {
		return nil, err
	}
	st, err := qs.QuotaStatus(ctx, name, delta, e.defaultQuota)
	if err != nil {
		return nil, err
	}
	if err := CheckQuota(name, st.Counts); err != nil {
		err.(*QuotaError).Admission = true
		return st, err
	}
	return st, nil
}

// quotasUnsupported is the answer of a store that keeps no quotas.
func quotasUnsupported() error {
	return &InvalidError{Code: "quotas_unsupported", Message: "this store keeps no quotas", Hint: "use the SQLite or PostgreSQL store"}
}

package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
)

// RetentionScope is what a retention policy applies to.
type RetentionScope string

// Retention scopes, from the broadest: a state follows its own policy, else
// its environment's (for a tenant's state), else the server's.
const (
	RetentionServer      RetentionScope = "server"
	RetentionEnvironment RetentionScope = "environment"
	RetentionState       RetentionScope = "state"
)

// RetentionPolicy says which versions of states retention keeps: the last
// KeepLast versions and the versions of the last KeepDays days (a version
// is kept when either keeps it; 0 sets no such limit). A policy with
// neither keeps everything: it exempts a state or an environment from a
// broader policy. Whatever the policy, retention never prunes a state's
// current version, a version a lock holder or an apply run in flight
// started from or any version after it, nor a pinned version (the target
// of a rollback plan, for RetentionPinTTL).
type RetentionPolicy struct {
	Scope RetentionScope `json:"scope"`
	// Target is the environment's public id (env_…) or the state's name;
	// empty for the server.
	Target    string    `json:"target,omitempty"`
	KeepLast  int64     `json:"keep_last"`
	KeepDays  int64     `json:"keep_days"`
	Updated   time.Time `json:"updated"`
	UpdatedBy string    `json:"updated_by"`
}

// KeepsAll reports whether p prunes nothing.
func (p *RetentionPolicy) KeepsAll() bool { return p.KeepLast <= 0 && p.KeepDays <= 0 }

// String names the policy as history and the audit log record it, e.g.
// "state:prod keep_last=10 keep_days=30".
func (p *RetentionPolicy) String() string {
	var b strings.Builder
	b.WriteString(string(p.Scope))
	if p.Target != "" {
		b.WriteString(":" + p.Target)
	}
	if p.KeepsAll() {
		b.WriteString(" keep everything")
	}
	if p.KeepLast > 0 {
		fmt.Fprintf(&b, " keep_last=%d", p.KeepLast)
	}
	if p.KeepDays > 0 {
		fmt.Fprintf(&b, " keep_days=%d", p.KeepDays)
	}
	return b.String()
}

// maxKeep bounds KeepLast and KeepDays (a policy keeping more than this is
// keeping everything).
const maxKeep = 1_000_000_000

// ValidRetentionPolicy checks a policy's scope, target and limits, with
// an *InvalidError (invalid_retention_policy) saying what to send.
func ValidRetentionPolicy(p *RetentionPolicy) error {
	bad := func(msg string) error {
		return &kilolock.InvalidError{Code: "invalid_retention_policy", Message: msg,
			Hint: "use kl retention set --server-wide | --env env_… | --state NAME, with --keep-last N and/or --keep-days D (0 for no limit)"}
	}
	switch p.Scope {
	case RetentionServer:
		if p.Target != "" {
			return bad("the server's policy has no target")
		}
	case RetentionEnvironment:
		if !strings.HasPrefix(p.Target, "env_") || kilolock.ValidID("environment", p.Target) != nil {
			return bad(fmt.Sprintf("%s is not an environment's public id (env_…)", kilolock.Clip(p.Target)))
		}
	case RetentionState:
		if err := kilolock.ValidStateName(p.Target); err != nil {
			return err
		}
	default:
		return bad(fmt.Sprintf("unknown retention scope %s", kilolock.Clip(string(p.Scope))))
	}
	if p.KeepLast < 0 || p.KeepDays < 0 || p.KeepLast > maxKeep || p.KeepDays > maxKeep {
		return bad(fmt.Sprintf("keep_last and keep_days take 0 to %d", maxKeep))
	}
	return nil
}

// PolicyFor returns the policy among policies that applies to the state
// called name: its own, else its environment's (a tenant's state, see
// TenantStateName), else the server's; nil when none does.
func PolicyFor(policies []RetentionPolicy, name string) *RetentionPolicy {
	env := ""
	if ws, rest, ok := strings.Cut(name, "."); ok && strings.HasPrefix(ws, "ws_") {
		env, _, _ = strings.Cut(rest, ".")
	}
	var found *RetentionPolicy
	rank := 0
	for i := range policies {
		p := &policies[i]
		r := 0
		switch {
		case p.Scope == RetentionState && p.Target == name:
			r = 3
		case p.Scope == RetentionEnvironment && env != "" && p.Target == env:
			r = 2
		case p.Scope == RetentionServer:
			r = 1
		}
		if r > rank {
			found, rank = p, r
		}
	}
	return found
}

// RetentionPinTTL is how long the target of a rollback plan stays pinned
// against retention: the plan can be applied for that long.
const RetentionPinTTL = 7 * 24 * time.Hour

// PinRollbackPlan is the reason of a pin on a rollback plan's target.
const PinRollbackPlan = "rollback plan"

// VersionPin keeps one version from retention until Expires.
type VersionPin struct {
	Number  int64
	Reason  string
	Actor   string
	Expires time.Time
}

// PruneRequest asks a RetentionStore to prune versions of one state.
type PruneRequest struct {
	State string
	// KeepLast keeps the newest KeepLast versions (0: no such limit).
	KeepLast int64
	// Before prunes only versions created before it (zero: no such
	// limit).
	Before time.Time
	// Max bounds the versions pruned in the request's one transaction
	// (0: all, for a dry run).
	Max int
	// DryRun lists what would be pruned and changes nothing.
	DryRun bool
	// Policy is recorded with each pruned version (RetentionPolicy.String).
	Policy string
	// By is who prunes, as the audit log records it.
	By kilolock.Caller
	// Now is when pins expire from; zero means the real time.
	Now time.Time
}

// PruneResult is what one PruneRequest pruned (or would prune).
type PruneResult struct {
	// Versions are the numbers of the versions pruned, ascending.
	Versions []int64 `json:"versions"`
	// Intervals are the instance and output intervals deleted: those that
	// held only pruned versions. Moved are those whose bounds moved onto
	// kept versions.
	Intervals int `json:"intervals"`
	Moved     int `json:"moved"`
	// Payloads are the objects deleted: those only pruned versions held.
	Payloads int `json:"payloads"`
	// Kept says, for a dry run, why each version not listed is kept: one
	// range per reason, a version in several ranges kept for each.
	Kept []KeptRange `json:"kept,omitempty"`
}

// Why a version is kept (KeptRange.Reason).
const (
	KeptCurrent  = "current"        // the state's current version
	KeptKeepLast = "keep_last"      // among the newest the policy keeps
	KeptKeepDays = "keep_days"      // younger than the policy's days
	KeptLockBase = "lock_base"      // a held lock's base, and what followed
	KeptRunBase  = "apply_run_base" // an apply run in flight's base, and what followed
	KeptTag      = "tag"            // tagged
	KeptPin      = "pin"            // pinned (a rollback plan's target)
)

// KeptRange is a run of versions retention keeps, and why: Reason one of
// the Kept… codes, Detail what holds it ("tag pre-migration", "lock 6f93…
// by bob, plan").
type KeptRange struct {
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// String renders the range as `kl retention apply --dry-run` lists it:
// "@9-@12 lock_base: lock 6f93… by bob (plan)".
func (k KeptRange) String() string {
	at := fmt.Sprintf("@%d", k.From)
	if k.To != k.From {
		at = fmt.Sprintf("@%d-@%d", k.From, k.To)
	}
	if k.Detail == "" {
		return at + " " + k.Reason
	}
	return at + " " + k.Reason + ": " + k.Detail
}

// RetentionStore is the optional capability of a Store that keeps
// retention policies and prunes versions. Find it with a type assertion.
type RetentionStore interface {
	// PutRetentionPolicy creates or replaces the policy of p's scope and
	// target (Updated set by the store), and records it in the audit log
	// as retention.set, in one transaction.
	PutRetentionPolicy(ctx context.Context, p *RetentionPolicy, by kilolock.Caller) error
	// DeleteRetentionPolicy removes a policy (audited as retention.unset).
	// ErrNotFound when there is none.
	DeleteRetentionPolicy(ctx context.Context, scope RetentionScope, target string, by kilolock.Caller) error
	// RetentionPolicies lists every policy, by scope and target.
	RetentionPolicies(ctx context.Context) ([]RetentionPolicy, error)
	// Prune prunes, in one transaction under the state's row lock, at most
	// r.Max of the versions r's limits do not keep, oldest first, never a
	// protected one (see RetentionPolicy), with the intervals and payloads
	// only they held, and records each as pruned and the whole in the
	// audit log (retention.prune). Its cost is proportional to what it
	// prunes. A dry run lists what it would prune and, in Kept, why every
	// other version is kept. ErrNotFound when the state does not exist.
	Prune(ctx context.Context, r PruneRequest) (*PruneResult, error)
	// PinVersion keeps a version of a state from retention until
	// pin.Expires (a later pin of the same reason replaces it).
	// ErrNotFound when the state or the version does not exist.
	PinVersion(ctx context.Context, name string, pin VersionPin) error
	// PrunedVersions lists the runs of pruned versions of a state numbered
	// below before (0: all), newest first, at most limit runs (0: 50).
	// ErrNotFound when the state does not exist.
	PrunedVersions(ctx context.Context, name string, before int64, limit int) ([]kilolock.PrunedRange, error)
}

// errNoRetention is a store that keeps no retention policies.
var errNoRetention = &kilolock.RefusedError{Code: "retention_unsupported", Message: "this store keeps no retention policies",
	Hint: "use the SQLite or PostgreSQL store (store.Open)"}

func retentionStore(e *kilolock.Engine) (RetentionStore, error) {
	rs, ok := e.Store().(RetentionStore)
	if !ok {
		return nil, errNoRetention
	}
	return rs, nil
}

// SetRetentionPolicy validates and stores p for its scope and target.
func SetRetentionPolicy(ctx context.Context, e *kilolock.Engine, by kilolock.Caller, p RetentionPolicy) (*RetentionPolicy, error) {
	rs, err := retentionStore(e)
	if err != nil {
		return nil, err
	}
	if err := ValidRetentionPolicy(&p); err != nil {
		return nil, err
	}
	p.UpdatedBy = by.Who()
	if err := rs.PutRetentionPolicy(ctx, &p, by); err != nil {
		return nil, err
	}
	return &p, nil
}

// UnsetRetentionPolicy removes the policy of scope and target.
// ErrNotFound when there is none.
func UnsetRetentionPolicy(ctx context.Context, e *kilolock.Engine, by kilolock.Caller, scope RetentionScope, target string) error {
	rs, err := retentionStore(e)
	if err != nil {
		return err
	}
	if err := ValidRetentionPolicy(&RetentionPolicy{Scope: scope, Target: target}); err != nil {
		return err
	}
	err = rs.DeleteRetentionPolicy(ctx, scope, target, by)
	if errors.Is(err, kilolock.ErrNotFound) {
		return &kilolock.ControlError{Err: kilolock.ErrNotFound, Code: "retention_policy_not_found",
			Message: fmt.Sprintf("there is no retention policy for %s", (&RetentionPolicy{Scope: scope, Target: target}).String()),
			Hint:    "kl retention list shows the policies"}
	}
	return err
}

// RetentionPolicies lists every policy.
func RetentionPolicies(ctx context.Context, e *kilolock.Engine) ([]RetentionPolicy, error) {
	rs, err := retentionStore(e)
	if err != nil {
		return nil, err
	}
	return rs.RetentionPolicies(ctx)
}

// PrunedVersions lists the runs of pruned versions of a state (see
// RetentionStore.PrunedVersions); an empty list from a store without
// retention.
func PrunedVersions(ctx context.Context, e *kilolock.Engine, name string, before int64, limit int) ([]kilolock.PrunedRange, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	rs, ok := e.Store().(RetentionStore)
	if !ok {
		return []kilolock.PrunedRange{}, nil
	}
	return rs.PrunedVersions(ctx, name, before, limit)
}

// RetentionOptions say how ApplyRetention runs.
type RetentionOptions struct {
	// DryRun lists what would be pruned and changes nothing.
	DryRun bool
	// State limits the run to one state; empty means every state.
	State string
	// Batch is the most versions pruned in one transaction (0: 100): a
	// run cut short (a crash, kill -9) loses at most one batch's work,
	// never what must be kept.
	Batch int
	// By is who prunes, as history and the audit log record it.
	By kilolock.Caller
}

// RetentionReport is what a retention run pruned, state by state.
type RetentionReport struct {
	DryRun bool `json:"dry_run"`
	// States are the states that have a policy that prunes, by name.
	States []StatePruning `json:"states"`
	// Versions, Intervals, Moved and Payloads are the totals.
	Versions  int `json:"versions"`
	Intervals int `json:"intervals"`
	Moved     int `json:"moved"`
	Payloads  int `json:"payloads"`
}

// StatePruning is what a retention run pruned of one state.
type StatePruning struct {
	State  string `json:"state"`
	Policy string `json:"policy"`
	PruneResult
}

// defaultPruneBatch is RetentionOptions.Batch when 0.
const defaultPruneBatch = 100

// ApplyRetention prunes every state (or o.State) by the policy that
// applies to it (PolicyFor), in transactions of o.Batch versions each:
// each is whole or not at all, and re-checks what is protected under the
// state's row lock, so writes, locks and other replicas' runs may go on
// meanwhile. A state without a policy, or whose policy keeps everything,
// is left alone.
func ApplyRetention(ctx context.Context, e *kilolock.Engine, o RetentionOptions) (*RetentionReport, error) {
	rs, err := retentionStore(e)
	if err != nil {
		return nil, err
	}
	if o.Batch <= 0 {
		o.Batch = defaultPruneBatch
	}
	policies, err := rs.RetentionPolicies(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	if o.State != "" {
		if _, err := e.State(ctx, o.State); err != nil {
			return nil, err
		}
		names = []string{o.State}
	} else {
		sts, err := e.Store().States(ctx)
		if err != nil {
			return nil, err
		}
		for _, st := range sts {
			names = append(names, st.Name)
		}
	}
	rep := &RetentionReport{DryRun: o.DryRun, States: []StatePruning{}}
	now := e.Now().UTC()
	for _, name := range names {
		p := PolicyFor(policies, name)
		if p == nil || p.KeepsAll() {
			continue
		}
		req := PruneRequest{State: name, KeepLast: p.KeepLast, Policy: p.String(), By: o.By, DryRun: o.DryRun, Now: now}
		if p.KeepDays > 0 {
			req.Before = now.Add(-time.Duration(p.KeepDays) * 24 * time.Hour)
		}
		sp := StatePruning{State: name, Policy: req.Policy, PruneResult: PruneResult{Versions: []int64{}}}
		if o.DryRun {
			sp.Kept = []KeptRange{}
		}
		for {
			if !o.DryRun {
				req.Max = o.Batch
			}
			res, err := rs.Prune(ctx, req)
			if errors.Is(err, kilolock.ErrNotFound) {
				break // deleted meanwhile
			}
			if err != nil {
				return rep, fmt.Errorf("prune state %s: %w", name, err)
			}
			sp.Versions = append(sp.Versions, res.Versions...)
			sp.Intervals += res.Intervals
			sp.Moved += res.Moved
			sp.Payloads += res.Payloads
			sp.Kept = append(sp.Kept, res.Kept...)
			if o.DryRun || len(res.Versions) < o.Batch {
				break
			}
		}
		if len(sp.Versions) > 0 {
			e.Logger().Info("retention", "state", name, "policy", sp.Policy, "pruned", len(sp.Versions), "dry_run", o.DryRun)
		}
		rep.States = append(rep.States, sp)
		rep.Versions += len(sp.Versions)
		rep.Intervals += sp.Intervals
		rep.Moved += sp.Moved
		rep.Payloads += sp.Payloads
	}
	return rep, nil
}

// PinRollbackTarget keeps a rollback plan's target from retention, so that
// the plan can still be applied; a store without retention needs none.
func PinRollbackTarget(ctx context.Context, e *kilolock.Engine, name string, number int64) error {
	rs, ok := e.Store().(RetentionStore)
	if !ok {
		return nil
	}
	return rs.PinVersion(ctx, name, VersionPin{Number: number, Reason: PinRollbackPlan, Expires: e.Now().UTC().Add(RetentionPinTTL)})
}

// VersionRuns writes ascending version numbers as runs: "@1-@5, @7".
func VersionRuns(ns []int64) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("@%d-@%d", ns[i], ns[j]))
		} else {
			parts = append(parts, fmt.Sprintf("@%d", ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

var _ kilolock.QuotaStore = (*Store)(nil)

// The statements of a quota count. A count reads the limits of every
// scope that may apply in one statement, and, for a tenant's state, the
// sum of its environment's active states' managed counts: one row per
// state of the environment (the states_environment index), each the
// count its current version keeps. A commit locks the environment's row
// first when a limit applies to it, so that commits to two states of one
// environment count one after the other (on SQLite the write transaction
// serializes them already).
const (
	sqlQuotaLimits = `SELECT scope, target, soft, hard, unlimited FROM quotas
		WHERE (scope = 'state' AND target = $1) OR (scope IN ('workspace_states', 'workspace_environments') AND target = $2)
			OR (scope = 'environment' AND target = $3)`
	// sqlLockEnvironment returns (and locks) the environment's row when a
	// limit that is not unlimited applies to it.
	sqlLockEnvironment = `SELECT e.public_id FROM environments e WHERE e.public_id = $1 AND coalesce(
			(SELECT NOT q.unlimited FROM quotas q WHERE q.scope = 'environment' AND q.target = e.public_id),
			(SELECT NOT q.unlimited FROM quotas q WHERE q.scope = 'workspace_environments' AND q.target = e.workspace_id),
			false){forupdate}`
	sqlEnvironment = `SELECT public_id FROM environments WHERE public_id = $1`
	// sqlEnvironmentManaged sums the environment's active states and says
	// whether state $2 is archived. Each state's count is a probe of the
	// versions' primary key (a subquery per row): a join may scan every
	// version of the database, as statistics that say little choose.
	sqlEnvironmentManaged = `SELECT CAST(coalesce(sum(c.managed), 0) AS BIGINT),
			EXISTS (SELECT 1 FROM state_holds h WHERE h.name = $2 AND h.lifecycle = 'archived')
		FROM (SELECT (SELECT v.managed_count FROM state_versions v WHERE v.id = s.current_version_id) AS managed
			FROM states s
			WHERE s.environment_id = $1 AND NOT EXISTS (SELECT 1 FROM state_holds h WHERE h.name = s.name AND h.lifecycle = 'archived')) AS c`
	sqlStateManaged = `SELECT v.managed_count FROM states s JOIN state_versions v ON v.id = s.current_version_id WHERE s.name = $1`
	// sqlLatestQuotaEvent reads a state's newest event of level $2
	// backwards along the (state_id, level, id) index.
	sqlLatestQuotaEvent = `SELECT id, created_at, level, scope, target, limit_from, current_count, result_count, soft, hard, version, lock_id, actor
		FROM quota_events WHERE state_id = ` + sqlStateID + ` AND level = $2 ORDER BY id DESC LIMIT 1`
)

// queueQuotaFacts queues in b the reads of what counting state name needs
// (with managed its managed count, when the caller knows it; else read
// into f.Managed), and returns the facts they fill once b is sent. With
// lock, the environment's row is locked when a limit applies to it.
func queueQuotaFacts(b *Batch, name string, def *quota.Limit, lock bool) *kilolock.QuotaFacts {
	f := &kilolock.QuotaFacts{State: name, ServerDefault: def}
	ws, env, _, tenant := tenancy.SplitTenantStateName(name)
	b.Query(func(r Rows) error {
		var (
			scope, target string
			l             quota.Limit
		)
		if err := r.Scan(&scope, &target, &l.Soft, &l.Hard, &l.Unlimited); err != nil {
			return err
		}
		switch kilolock.QuotaScope(scope) {
		case kilolock.QuotaState:
			f.StateLimit = &l
		case kilolock.QuotaWorkspaceStates:
			f.WorkspaceStates = &l
		case kilolock.QuotaEnvironment:
			f.EnvironmentLimit = &l
		case kilolock.QuotaWorkspaceEnvironments:
			f.WorkspaceEnvironments = &l
		}
		return nil
	}, sqlQuotaLimits, name, ws, env)
	if !tenant {
		return f
	}
	envSQL := sqlEnvironment
	if lock {
		envSQL = sqlLockEnvironment
	}
	b.Query(func(r Rows) error { return r.Scan(&f.Environment) }, envSQL, env)
	b.Query(func(r Rows) error { return r.Scan(&f.EnvironmentManaged, &f.Archived) }, sqlEnvironmentManaged, env, name)
	return f
}

// checkQuota counts the commit adding delta managed instances to st,
// whose current version has managed, under st's row lock, with the
// environment's row locked first. It returns the warnings to record, or a
// *kilolock.QuotaError.
func checkQuota(ctx context.Context, tx Tx, st *stateRow, managed, delta int64, def *quota.Limit) ([]kilolock.QuotaCount, error) {
	b := &Batch{}
	f := queueQuotaFacts(b, st.Name, def, true)
	if err := tx.Send(ctx, b); err != nil {
		return nil, err
	}
	f.Managed = managed
	counts := f.Count(delta)
	if err := kilolock.CheckQuota(st.Name, counts); err != nil {
		return nil, err
	}
	return kilolock.Warnings(counts), nil
}

var quotaEventColumns = []string{"state_id", "created_at", "level", "scope", "target", "limit_from", "current_count", "result_count",
	"soft", "hard", "version", "lock_id", "actor"}

// queueWarnings queues the quota events of a commit's warnings, counted
// in stats.
func queueWarnings(b *Batch, stats *kilolock.WriteStats, stateID int64, v *kilolock.Version, c *kilolock.Commit, warnings []kilolock.QuotaCount) {
	for _, w := range warnings {
		values := []any{stateID, string(w.Level), w.Scope, w.Target, w.From, w.Current, w.Result, w.Limit.Soft, w.Limit.Hard, v.Number, c.LockID, v.Actor}
		b.Exec(counter(stats, 1, rowBytes(values)+intBytes), `INSERT INTO quota_events (`+join(quotaEventColumns)+`)
			VALUES ($1, {now}, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, values...) // created_at counts as 8
	}
}

// SetQuota sets the limit of t, or clears it (nil).
func (s *Store) SetQuota(ctx context.Context, t kilolock.QuotaTarget, l *quota.Limit) error {
	if l == nil {
		return s.exec(ctx, "clear quota", "", "", `DELETE FROM quotas WHERE scope = $1 AND target = $2`, string(t.Scope), t.Target)
	}
	return s.exec(ctx, "set quota", "", "", `INSERT INTO quotas (scope, target, soft, hard, unlimited, updated_at) VALUES ($1, $2, $3, $4, $5, {now})
		ON CONFLICT (scope, target) DO UPDATE SET soft = excluded.soft, hard = excluded.hard, unlimited = excluded.unlimited, updated_at = excluded.updated_at`,
		string(t.Scope), t.Target, l.Soft, l.Hard, l.Unlimited)
}

// Quotas lists the limits set, by scope and target.
func (s *Store) Quotas(ctx context.Context) ([]kilolock.QuotaSetting, error) {
	return list(ctx, s, "quotas", func(r Rows, q *kilolock.QuotaSetting) error {
		return r.Scan(&q.Scope, &q.Target, &q.Limit.Soft, &q.Limit.Hard, &q.Limit.Unlimited, &q.Updated)
	}, `SELECT scope, target, soft, hard, unlimited, updated_at FROM quotas ORDER BY scope{C}, target{C}`)
}

// QuotaStatus counts state name and its environment, in one snapshot and
// one batch, as a commit adding delta would, with its latest refusal and
// warning.
func (s *Store) QuotaStatus(ctx context.Context, name string, delta int64, def *quota.Limit) (*kilolock.QuotaStatus, error) {
	return readValue(ctx, s, "quota status", func(tx Tx) (*kilolock.QuotaStatus, error) {
		b := &Batch{}
		f := queueQuotaFacts(b, name, def, false)
		exists := false
		b.Query(func(r Rows) error { exists = true; return r.Scan(&f.Managed) }, sqlStateManaged, name)
		var refusal, warning *kilolock.QuotaEvent
		b.Query(readQuotaEvent(name, &refusal), sqlLatestQuotaEvent, name, string(quota.Exceed))
		b.Query(readQuotaEvent(name, &warning), sqlLatestQuotaEvent, name, string(quota.Warn))
		if err := tx.Send(ctx, b); err != nil {
			return nil, err
		}
		counts := f.Count(delta)
		return &kilolock.QuotaStatus{State: name, Environment: f.Environment, Exists: exists, Archived: f.Archived, Delta: delta,
			Level: worst(counts), Counts: counts, LatestRefusal: refusal, LatestWarning: warning}, nil
	})
}

func worst(counts []kilolock.QuotaCount) quota.Level {
	vs := make([]quota.Verdict, len(counts))
	for i, c := range counts {
		vs[i] = c.Verdict
	}
	return quota.Worst(vs...).Level
}

// readQuotaEvent returns a row reader setting *e.
func readQuotaEvent(name string, e **kilolock.QuotaEvent) func(Rows) error {
	return func(r Rows) error {
		ev := &kilolock.QuotaEvent{State: name}
		var level string
		if err := r.Scan(&ev.ID, &ev.Created, &level, &ev.Scope, &ev.Target, &ev.From, &ev.Current, &ev.Result,
			&ev.Limit.Soft, &ev.Limit.Hard, &ev.Version, &ev.LockID, &ev.Actor); err != nil {
			return err
		}
		ev.Level = quota.Level(level)
		ev.Remaining = ev.Limit.Hard - ev.Result
		*e = ev
		return nil
	}
}

// RecordQuotaRefusal keeps a refused commit of state name. ErrNotFound
// when the state does not exist.
func (s *Store) RecordQuotaRefusal(ctx context.Context, name string, e *kilolock.QuotaEvent) error {
	var (
		id      int64
		created time.Time
	)
	err := s.write(ctx, "record quota refusal", func(tx Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO quota_events (`+join(quotaEventColumns)+`)
			SELECT s.id, {now}, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10, $11 FROM states s WHERE s.name = $1
			RETURNING id, created_at`,
			name, string(quota.Exceed), e.Scope, e.Target, e.From, e.Current, e.Result, e.Limit.Soft, e.Limit.Hard, e.LockID, e.Actor).Scan(&id, &created)
		if errors.Is(err, ErrNoRows) {
			return notFound(name)
		}
		return err
	})
	if err != nil {
		return err
	}
	e.ID, e.State, e.Created, e.Level, e.Version = id, name, created, quota.Exceed, 0
	return nil
}

package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/retention"
)

var _ retention.RetentionStore = (*Store)(nil)

// auditIn queues the audit entry of a retention change, in the change's
// own transaction.
func auditIn(b *Batch, by kilolock.Caller, action, target, reason string) {
	actor := by.Actor
	if actor == "" {
		actor = "anonymous"
	}
	b.Exec(nil, `INSERT INTO audit_log (at, actor, action, target, remote, denied, reason, request_id)
		VALUES ({now}, $1, $2, $3, $4, false, $5, $6)`, actor, action, target, by.From, reason, by.RequestID)
}

// PutRetentionPolicy creates or replaces the policy of p's scope and
// target, audited as retention.set in the same transaction.
func (s *Store) PutRetentionPolicy(ctx context.Context, p *retention.RetentionPolicy, by kilolock.Caller) error {
	return s.write(ctx, "put retention policy", func(tx Tx) error {
		b := &Batch{}
		b.Query(func(r Rows) error { return r.Scan(&p.Updated) },
			`INSERT INTO retention_policies (scope, target, keep_last, keep_days, updated_at, updated_by)
			VALUES ($1, $2, $3, $4, {now}, $5)
			ON CONFLICT (scope, target) DO UPDATE SET keep_last = excluded.keep_last, keep_days = excluded.keep_days,
				updated_at = excluded.updated_at, updated_by = excluded.updated_by
			RETURNING updated_at`, string(p.Scope), p.Target, p.KeepLast, p.KeepDays, p.UpdatedBy)
		auditIn(b, by, "retention.set", p.String(), "")
		return tx.Send(ctx, b)
	})
}

// DeleteRetentionPolicy removes a policy, audited as retention.unset.
// ErrNotFound when there is none.
func (s *Store) DeleteRetentionPolicy(ctx context.Context, scope retention.RetentionScope, target string, by kilolock.Caller) error {
	p := retention.RetentionPolicy{Scope: scope, Target: target}
	return s.write(ctx, "delete retention policy", func(tx Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM retention_policies WHERE scope = $1 AND target = $2`, string(scope), target)
		if err != nil {
			return err
		}
		if n == 0 {
			return missing("retention policy", p.String())
		}
		b := &Batch{}
		auditIn(b, by, "retention.unset", p.String(), "")
		return tx.Send(ctx, b)
	})
}

// RetentionPolicies lists every policy by scope and target.
func (s *Store) RetentionPolicies(ctx context.Context) ([]retention.RetentionPolicy, error) {
	out, err := list(ctx, s, "retention policies", func(r Rows, p *retention.RetentionPolicy) error {
		var scope string
		err := r.Scan(&scope, &p.Target, &p.KeepLast, &p.KeepDays, &p.Updated, &p.UpdatedBy)
		p.Scope = retention.RetentionScope(scope)
		return err
	}, `SELECT scope, target, keep_last, keep_days, updated_at, updated_by FROM retention_policies ORDER BY scope{C}, target{C}`)
	if err == nil && s.resort {
		inOrder(out, func(a, b retention.RetentionPolicy) int {
			return strings.Compare(string(a.Scope)+"\x00"+a.Target, string(b.Scope)+"\x00"+b.Target)
		})
	}
	return out, err
}

// PinVersion keeps a version from retention until pin.Expires.
func (s *Store) PinVersion(ctx context.Context, name string, pin retention.VersionPin) error {
	return s.write(ctx, "pin version", func(tx Tx) error {
		n, err := tx.Exec(ctx, `INSERT INTO version_pins (state_id, number, reason, actor, created_at, expires_at)
			SELECT v.state_id, v.number, $3, $4, {now}, $5 FROM state_versions v
			WHERE v.state_id = `+sqlStateID+` AND v.number = $2
			ON CONFLICT (state_id, number, reason) DO UPDATE SET actor = excluded.actor, created_at = excluded.created_at,
				expires_at = excluded.expires_at`, name, pin.Number, pin.Reason, pin.Actor, pin.Expires.UTC())
		if err == nil && n == 0 {
			return noVersion(ctx, tx, name, fmt.Sprintf("version %d", pin.Number))
		}
		return err
	})
}

// SQLProtectedVersions are the versions of state $1 that retention keeps
// whatever the policy, beside the current one and those from
// SQLProtectedFrom on: versions pinned at $2 (a rollback plan's target)
// and tagged versions. It is the one place such a rule joins, as one more
// UNION branch.
const SQLProtectedVersions = `SELECT number FROM version_pins WHERE state_id = $1 AND expires_at > $2
		UNION SELECT version FROM state_tags WHERE state_id = $1`

// SQLProtectedFrom is the first version of state $1 that a holder needs,
// at $2: the base of a held lock (a writer merges onto it, a plan compares
// with it) or the version an apply run in flight planned from; that version
// and every later one are kept, since a holder's commit reads the changes
// made since its base. NULL when none.
const SQLProtectedFrom = `SELECT min(n) FROM (
		SELECT base_version AS n FROM locks WHERE state_id = $1 AND base_version > 0
		UNION ALL
		SELECT (SELECT max(v.number) FROM state_versions v WHERE v.state_id = a.state_id AND v.serial = a.source_serial)
			FROM apply_runs a WHERE a.state_id = $1 AND a.status IN ('waiting', 'active') AND a.expires_at > $2
	) AS p`

// candidate is a version retention may prune.
type candidate struct {
	rowid  any
	number int64
}

// candidates lists, oldest first and at most r.Max (0: all), the versions
// of the state (id stateID, current version current) that r prunes: below
// the newest r.KeepLast and created before r.Before, below the current
// version and the first protected one, and not pinned. Its reads are index
// range scans bounded by what it returns (and the pins among them): the
// state's older versions are the ones earlier runs left.
func candidates(ctx context.Context, tx Tx, stateID, current int64, r *retention.PruneRequest, now time.Time) (out []candidate, skipped int, err error) {
	below := current
	var (
		from   *int64
		keepAt *int64
		pinned = map[int64]bool{}
	)
	b := &Batch{}
	b.Query(func(rows Rows) error { return rows.Scan(&from) }, SQLProtectedFrom, stateID, now)
	b.Query(func(rows Rows) error {
		var n int64
		err := rows.Scan(&n)
		pinned[n] = true
		return err
	}, SQLProtectedVersions, stateID, now)
	if r.KeepLast > 0 {
		b.Query(func(rows Rows) error { return rows.Scan(&keepAt) },
			`SELECT number FROM state_versions WHERE state_id = $1 ORDER BY number DESC LIMIT 1 OFFSET $2`, stateID, r.KeepLast-1)
	}
	if err := tx.Send(ctx, b); err != nil {
		return nil, 0, err
	}
	switch {
	case r.KeepLast > 0 && keepAt == nil:
		return nil, 0, nil // fewer versions than it keeps
	case keepAt != nil:
		below = min(below, *keepAt)
	}
	if from != nil {
		below = min(below, *from)
	}
	limit := int64(math.MaxInt32)
	if r.Max > 0 {
		limit = int64(r.Max + len(pinned))
	}
	rows, err := tx.Query(ctx, `SELECT {rowid}, number, created_at FROM state_versions WHERE state_id = $1 AND number < $2
		ORDER BY number LIMIT $3`, stateID, below, limit)
	err = EachRow(rows, err, func(rows Rows) error {
		var (
			c       candidate
			created time.Time
		)
		if err := rows.Scan(&c.rowid, &c.number, &created); err != nil {
			return err
		}
		// Versions are numbered in the order they were made: the first
		// one young enough ends the run (a clock that went back keeps
		// more, never less).
		if !r.Before.IsZero() && !created.Before(r.Before) {
			return errEnough
		}
		switch {
		case r.Max > 0 && len(out) == r.Max:
			return errEnough
		case pinned[c.number]:
			skipped++
		default:
			out = append(out, c)
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, skipped, err
}

// keptRanges says why retention keeps the versions of the state (id
// stateID, current version current) that r does not prune, reading what
// candidates reads (SQLProtectedFrom, SQLProtectedVersions, r's limits)
// with who holds each: one batch of index reads, for a dry run.
func keptRanges(ctx context.Context, tx Tx, stateID, current int64, r *retention.PruneRequest, now time.Time) ([]retention.KeptRange, error) {
	if current == 0 {
		return []retention.KeptRange{}, nil
	}
	kept := []retention.KeptRange{{From: current, To: current, Reason: retention.KeptCurrent, Detail: "the state's current version"}}
	var policy, locks, runs, tags, pins []retention.KeptRange
	var keepAt, young *int64
	b := &Batch{}
	if r.KeepLast > 0 {
		b.Query(func(rows Rows) error { return rows.Scan(&keepAt) },
			`SELECT number FROM state_versions WHERE state_id = $1 ORDER BY number DESC LIMIT 1 OFFSET $2`, stateID, r.KeepLast-1)
	}
	if !r.Before.IsZero() {
		b.Query(func(rows Rows) error { return rows.Scan(&young) },
			`SELECT min(number) FROM state_versions WHERE state_id = $1 AND created_at >= $2`, stateID, r.Before.UTC())
	}
	b.Query(func(rows Rows) error {
		var (
			id, who, op string
			base        int64
		)
		err := rows.Scan(&id, &who, &op, &base)
		locks = append(locks, retention.KeptRange{From: base, To: current, Reason: retention.KeptLockBase,
			Detail: fmt.Sprintf("lock %s by %s (%s) reads from its base", id, who, op)})
		return err
	}, `SELECT lock_id, who, operation, base_version FROM locks WHERE state_id = $1 AND base_version > 0 ORDER BY base_version, lock_id`, stateID)
	b.Query(func(rows Rows) error {
		var (
			id, actor string
			base      *int64
		)
		err := rows.Scan(&id, &actor, &base)
		if base != nil {
			runs = append(runs, retention.KeptRange{From: *base, To: current, Reason: retention.KeptRunBase,
				Detail: fmt.Sprintf("apply run %s by %s planned from it", id, actor)})
		}
		return err
	}, `SELECT a.id, a.actor, (SELECT max(v.number) FROM state_versions v WHERE v.state_id = a.state_id AND v.serial = a.source_serial)
		FROM apply_runs a WHERE a.state_id = $1 AND a.status IN ('waiting', 'active') AND a.expires_at > $2 ORDER BY a.id`, stateID, now)
	b.Query(func(rows Rows) error {
		var (
			name string
			n    int64
		)
		err := rows.Scan(&name, &n)
		tags = append(tags, retention.KeptRange{From: n, To: n, Reason: retention.KeptTag, Detail: "tag " + name})
		return err
	}, `SELECT name, version FROM state_tags WHERE state_id = $1 ORDER BY version, name{C}`, stateID)
	b.Query(func(rows Rows) error {
		var (
			n             int64
			reason, actor string
			expires       time.Time
		)
		err := rows.Scan(&n, &reason, &actor, &expires)
		if actor != "" {
			reason += " by " + actor
		}
		pins = append(pins, retention.KeptRange{From: n, To: n, Reason: retention.KeptPin,
			Detail: fmt.Sprintf("%s, pinned until %s", reason, expires.UTC().Format(time.RFC3339))})
		return err
	}, `SELECT number, reason, actor, expires_at FROM version_pins WHERE state_id = $1 AND expires_at > $2 ORDER BY number, reason`, stateID, now)
	if err := tx.Send(ctx, b); err != nil {
		return nil, err
	}
	if keepAt != nil {
		policy = append(policy, retention.KeptRange{From: *keepAt, To: current, Reason: retention.KeptKeepLast,
			Detail: fmt.Sprintf("%s: the newest %d", r.Policy, r.KeepLast)})
	} else if r.KeepLast > 0 {
		policy = append(policy, retention.KeptRange{From: 1, To: current, Reason: retention.KeptKeepLast,
			Detail: fmt.Sprintf("%s: the state has fewer versions than it keeps", r.Policy)})
	}
	if young != nil {
		policy = append(policy, retention.KeptRange{From: *young, To: current, Reason: retention.KeptKeepDays,
			Detail: fmt.Sprintf("%s: made after %s", r.Policy, r.Before.UTC().Format(time.RFC3339))})
	}
	for _, part := range [][]retention.KeptRange{policy, locks, runs, tags, pins} {
		kept = append(kept, part...)
	}
	return kept, nil
}

// errEnough ends a scan early.
var errEnough = errors.New("enough rows")

// Prune prunes what candidates selects, in one transaction under the
// state's row lock (so no commit, lock or other pruning runs meanwhile),
// or with r.DryRun lists it in a read transaction. See pruneVersions.
func (s *Store) Prune(ctx context.Context, r retention.PruneRequest) (*retention.PruneResult, error) {
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	var res *retention.PruneResult
	if r.DryRun {
		err := s.read(ctx, "prune (dry run)", func(tx Tx) error {
			res = &retention.PruneResult{Versions: []int64{}}
			var id, current int64
			err := tx.QueryRow(ctx, `SELECT id, current_version FROM states WHERE name = $1`, r.State).Scan(&id, &current)
			if errors.Is(err, ErrNoRows) {
				return notFound(r.State)
			}
			if err != nil {
				return err
			}
			cs, _, err := candidates(ctx, tx, id, current, &r, now)
			if err != nil {
				return err
			}
			for _, c := range cs {
				res.Versions = append(res.Versions, c.number)
			}
			res.Kept, err = keptRanges(ctx, tx, id, current, &r, now)
			return err
		})
		return res, err
	}
	err := s.write(ctx, "prune", func(tx Tx) error {
		res = &retention.PruneResult{Versions: []int64{}}
		st, err := lockState(ctx, tx, r.State, false, "", nil)
		if err != nil {
			return err
		}
		cs, skipped, err := candidates(ctx, tx, st.id, st.Current, &r, now)
		if err != nil || len(cs) == 0 {
			return err
		}
		return pruneVersions(ctx, tx, st, cs, skipped, &r, res)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// pruneVersions deletes the versions cs of state st and keeps every other
// version as it was, touching only the rows the pruned versions changed.
//
// No bound of an interval moves: a bound reads as the first version kept
// at or after it (a bound at a pruned number stands for the next version
// kept; see SQLKeptAt). An interval holds the same kept versions whatever
// is pruned around it, so the intervals the pruned versions left open —
// every instance the oldest version created, say — are not rewritten, and
// pruning one version costs what that version changed, not the state's size.
// What does change:
//
//   - an interval that now holds no kept version is deleted;
//   - two intervals of one key that come to meet with the same hash (a
//     change undone within the pruned versions, or the objects between
//     them gone) become one, so that no kept version reads as changing
//     what it did not: the first takes the second's end;
//   - a payload no interval refers to any more is deleted;
//   - each version gets its marker in pruned_versions, and the batch one
//     audit entry.
//
// Such intervals end after lo, the first pruned version, and no later
// than nk, the first version kept after the last pruned one, or begin
// within (lo, nk]: two index range scans bounded by what the pruned
// versions (and nk) changed. An interval that ends at or before the
// newest version kept below lo (pinned, since candidates prune oldest
// first) holds that version or an older one and is not affected.
func pruneVersions(ctx context.Context, tx Tx, st *stateRow, cs []candidate, pinned int, r *retention.PruneRequest, res *retention.PruneResult) error {
	pruned := make(map[int64]bool, len(cs))
	var rowids []any
	for _, c := range cs {
		pruned[c.number] = true
		res.Versions = append(res.Versions, c.number)
		rowids = append(rowids, c.rowid)
	}
	lo, hi := cs[0].number, cs[len(cs)-1].number
	// kept: the versions that stay, ascending, up to nk. Below lo they are
	// the pinned ones candidates skipped (a few); from lo to nk, the pinned
	// ones among the pruned; the current version is never pruned, so there
	// is an nk.
	var kept []int64
	keep := func(rows Rows) error {
		var n int64
		if err := rows.Scan(&n); err != nil {
			return err
		}
		if !pruned[n] && (len(kept) == 0 || kept[len(kept)-1] <= hi) {
			kept = append(kept, n)
		}
		return nil
	}
	scan := &Batch{}
	scan.Query(keep, `SELECT number FROM state_versions WHERE state_id = $1 AND number < $2 ORDER BY number`, st.id, lo)
	scan.Query(keep, `SELECT number FROM state_versions WHERE state_id = $1 AND number >= $2 ORDER BY number LIMIT $3`,
		st.id, lo, len(cs)+pinned+1)
	if err := tx.Send(ctx, scan); err != nil {
		return err
	}
	if len(kept) == 0 || kept[len(kept)-1] <= hi {
		return corrupt("state %q: no version is kept after version %d", st.Name, hi)
	}
	nk := kept[len(kept)-1]
	var pk int64 // the newest version kept below lo, 0 when none
	if i, _ := slices.BinarySearch(kept, lo); i > 0 {
		pk = kept[i-1]
	}
	// keptAt is the version a bound reads as: the first kept at or after
	// it. Past nk nothing changes, and a bound reads as itself.
	keptAt := func(n int64) int64 {
		if n > nk {
			return n
		}
		i, _ := slices.BinarySearch(kept, n)
		return kept[i]
	}

	b := &Batch{}
	var gone [][]byte
	for _, it := range []struct{ table, key string }{{"instance_intervals", "instance_id"}, {"output_intervals", "name"}} {
		var ivs []bounded
		seen := map[string]bool{}
		read := func(rows Rows) error {
			var iv bounded
			if err := rows.Scan(&iv.rowid, &iv.key, &iv.from, &iv.to, &iv.hash); err != nil {
				return err
			}
			id := iv.key + "\x00" + strconv.FormatInt(iv.from, 10)
			if !seen[id] {
				seen[id] = true
				ivs = append(ivs, iv)
			}
			return nil
		}
		scan := &Batch{}
		scan.Query(read, `SELECT {rowid}, `+it.key+`, valid_from, valid_to, hash FROM `+it.table+`
			WHERE state_id = $1 AND valid_to > $2 AND valid_to <= $3`, st.id, pk, nk)
		scan.Query(read, `SELECT {rowid}, `+it.key+`, valid_from, valid_to, hash FROM `+it.table+`
			WHERE state_id = $1 AND valid_from > $2 AND valid_from <= $3`, st.id, lo, nk)
		if err := tx.Send(ctx, scan); err != nil {
			return err
		}
		dels, hashes, ends := settle(ivs, keptAt)
		gone = append(gone, hashes...)
		res.Intervals += len(dels) - len(ends)
		if len(dels) > 0 {
			b.Exec(nil, `DELETE FROM `+it.table+` WHERE {rowidin $1}`, dels)
		}
		for _, e := range ends {
			res.Moved++
			b.Exec(nil, `UPDATE `+it.table+` SET valid_to = $1 WHERE {rowid} = $2`, e.to, e.rowid)
		}
	}
	if len(gone) > 0 {
		b.Exec(func(n int64) error { res.Payloads = int(n); return nil }, `DELETE FROM payloads WHERE state_id = $1
			AND hash IN (SELECT k FROM {bytes $2} AS u)
			AND NOT EXISTS (SELECT 1 FROM instance_intervals i WHERE i.state_id = $1 AND i.hash = payloads.hash)
			AND NOT EXISTS (SELECT 1 FROM output_intervals o WHERE o.state_id = $1 AND o.hash = payloads.hash)`, st.id, gone)
	}
	by := r.By.Actor
	if by == "" {
		by = "anonymous"
	}
	b.Exec(counter(&kilolock.WriteStats{}, len(cs), 0), `INSERT INTO pruned_versions (state_id, number, version_id, serial, source, actor, created_at, pruned_at, pruned_by, policy)
		SELECT state_id, number, id, serial, source, actor, created_at, {now}, $2, $3 FROM state_versions WHERE {rowidin $1}`, rowids, by, r.Policy)
	b.Exec(counter(&kilolock.WriteStats{}, len(cs), 0), `DELETE FROM state_versions WHERE {rowidin $1}`, rowids)
	auditIn(b, r.By, "retention.prune", st.Name, fmt.Sprintf("pruned %d version(s) %s under %s: %d interval(s) deleted, %d joined",
		len(cs), retention.VersionRuns(res.Versions), r.Policy, res.Intervals, res.Moved))
	return tx.Send(ctx, b)
}

// bounded is an interval pruning reads: its row, key, bounds (to nil while
// current) and hash.
type bounded struct {
	rowid any
	key   string
	from  int64
	to    *int64
	hash  []byte
}

// end is the new end of an interval that absorbed the next one of its key
// (to nil: it is current now).
type end struct {
	rowid any
	to    *int64
}

// settle works out what pruning does to the intervals ivs, keptAt mapping
// a bound to the version it reads as: the rows to delete — those that hold
// no kept version and those absorbed by the one before them — with their
// hashes, and the new ends of the absorbing ones. Two intervals of a key
// that come to meet (the first's end reads as the version the second's
// start does) with the same hash become one. ivs holds, for each key it
// holds, a run of consecutive intervals of that key (pruneVersions' scans
// return every interval between two they return), so meeting ones are
// next to each other once sorted.
func settle(ivs []bounded, keptAt func(int64) int64) (dels []any, hashes [][]byte, ends []end) {
	slices.SortFunc(ivs, func(a, b bounded) int {
		return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.from, b.from))
	})
	var (
		last   *bounded
		lastTo *int64 // last's end once it absorbed others
		grown  bool
	)
	flush := func() {
		if last != nil && grown {
			ends = append(ends, end{last.rowid, lastTo})
		}
		last, grown = nil, false
	}
	for i := range ivs {
		iv := &ivs[i]
		if iv.to != nil && keptAt(iv.from) >= keptAt(*iv.to) {
			dels, hashes = append(dels, iv.rowid), append(hashes, iv.hash)
			continue
		}
		if last != nil && last.key == iv.key && lastTo != nil && keptAt(*lastTo) == keptAt(iv.from) && string(last.hash) == string(iv.hash) {
			dels, hashes = append(dels, iv.rowid), append(hashes, iv.hash)
			lastTo, grown = iv.to, true
			continue
		}
		flush()
		last, lastTo = iv, iv.to
	}
	flush()
	return dels, hashes, ends
}

// PrunedVersions lists the runs of consecutive pruned versions of a state
// numbered below before (0: all), newest first, at most limit (0: 50): the
// numbers less their rank form one group per run (gaps and islands), split
// where the actor or the policy changes.
func (s *Store) PrunedVersions(ctx context.Context, name string, before int64, limit int) ([]kilolock.PrunedRange, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	if limit <= 0 {
		limit = 50
	}
	return ofState(ctx, s, "pruned versions", name, func(r Rows, p *kilolock.PrunedRange) (bool, error) {
		return true, r.Scan(&p.From, &p.To, &p.Versions, &p.PrunedAt, &p.PrunedBy, &p.Policy)
	}, `SELECT min(number), max(number), count(*), max(pruned_at), pruned_by, policy FROM (
			SELECT number, pruned_at, pruned_by, policy,
				number - row_number() OVER (PARTITION BY pruned_by, policy ORDER BY number) AS island
			FROM pruned_versions WHERE state_id = `+sqlStateID+` AND number < $2
		) AS p GROUP BY island, pruned_by, policy ORDER BY min(number) DESC LIMIT $3`, name, before, limit)
}

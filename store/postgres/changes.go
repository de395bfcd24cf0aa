package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// sqlStateID is the id of the state named $1, for statements sent in a batch
// before the id is known. The planner runs it once, as an InitPlan, and
// probes the indexes with its result.
const sqlStateID = `(SELECT id FROM states WHERE name = $1)`

// sqlCurrentVersion is the current version number of the state named $1.
const sqlCurrentVersion = `(SELECT current_version FROM states WHERE name = $1)`

// sqlChangesSince lists the keys versions after $2 changed: a version v
// changed a key iff it opened an interval of it (valid_from = v) or closed
// one (valid_to = v). Each branch is a range scan of the (state_id,
// valid_from) or (state_id, valid_to) index, so the cost is that of the
// rows returned, not of the state or its history (the NULL valid_to of the
// current intervals sort after the range, so the scan stops before them);
// UNION drops the second row of a change, which both closes and opens an
// interval.
//
// The upper bound, the current version, selects nothing more; it is there
// for the planner. A range bounded on both sides by values it does not know
// (a generic plan, which a prepared statement may switch to) is estimated
// at 0.5% of the rows, which keeps index scans; a range bounded on one side
// is estimated at a third, which for a state's versions or outputs is a
// sequential scan of the whole history.
const sqlChangesSince = `SELECT c.version, v.lock_id, v.actor, c.output, c.id
	FROM (
		SELECT valid_from AS version, false AS output, instance_id AS id FROM instance_intervals
			WHERE state_id = ` + sqlStateID + ` AND valid_from > $2 AND valid_from <= ` + sqlCurrentVersion + `
		UNION
		SELECT valid_to, false, instance_id FROM instance_intervals
			WHERE state_id = ` + sqlStateID + ` AND valid_to > $2 AND valid_to <= ` + sqlCurrentVersion + `
		UNION
		SELECT valid_from, true, name FROM output_intervals
			WHERE state_id = ` + sqlStateID + ` AND valid_from > $2 AND valid_from <= ` + sqlCurrentVersion + `
		UNION
		SELECT valid_to, true, name FROM output_intervals
			WHERE state_id = ` + sqlStateID + ` AND valid_to > $2 AND valid_to <= ` + sqlCurrentVersion + `
	) c
	JOIN state_versions v ON v.state_id = ` + sqlStateID + ` AND v.number = c.version
		AND v.number > $2 AND v.number <= ` + sqlCurrentVersion + `
	ORDER BY c.version, c.output, c.id COLLATE "C"`

// ChangesSince lists what every version numbered above after changed: one
// record per instance ID or output name a version added, changed or
// removed, ordered by version, then instances before outputs, then ID (in
// byte order). An empty list when no version is above after. ErrNotFound
// when the state does not exist.
//
// One round trip in one REPEATABLE READ snapshot: whether the state
// exists, and its changes.
func (s *Store) ChangesSince(ctx context.Context, name string, after int64) ([]kilolock.ChangeRecord, error) {
	out := []kilolock.ChangeRecord{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`, name)
		b.Queue(sqlChangesSince, name, after)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		var exists bool
		if err := br.QueryRow().Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		if err := eachRow(br, func(rows pgx.Rows) error {
			var r kilolock.ChangeRecord
			if err := rows.Scan(&r.Version, &r.LockID, &r.Actor, &r.Output, &r.ID); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		}); err != nil {
			return err
		}
		sortChanges(out)
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// The hashes of keys ($3) at version $2. Intervals of one key never
// overlap, so the key is in the version iff the last interval that began
// at or before it has not ended by it. The LATERAL … ORDER BY valid_from
// DESC LIMIT 1 finds that interval with one probe of the primary key
// (state_id, key, valid_from) per key, whatever the statistics say and
// however often the key changed.
const (
	sqlInstanceHashesAt = `SELECT u.id, c.hash FROM unnest($3::text[]) AS u (id)
		CROSS JOIN LATERAL (SELECT i.hash, i.valid_to FROM instance_intervals i
			WHERE i.state_id = ` + sqlStateID + ` AND i.instance_id = u.id AND i.valid_from <= $2
			ORDER BY i.valid_from DESC LIMIT 1) c
		WHERE c.valid_to IS NULL OR c.valid_to > $2`
	sqlOutputHashesAt = `SELECT u.name, c.hash FROM unnest($3::text[]) AS u (name)
		CROSS JOIN LATERAL (SELECT o.hash, o.valid_to FROM output_intervals o
			WHERE o.state_id = ` + sqlStateID + ` AND o.name = u.name AND o.valid_from <= $2
			ORDER BY o.valid_from DESC LIMIT 1) c
		WHERE c.valid_to IS NULL OR c.valid_to > $2`
)

// HashesAt returns the hashes, in version number, of the given instance
// IDs and output names; a key the version does not hold is absent from the
// maps (which are never nil). ErrNotFound when the state or the version
// does not exist.
//
// One round trip in one REPEATABLE READ snapshot, whatever the number of
// keys (they travel as arrays), and one index probe per key.
func (s *Store) HashesAt(ctx context.Context, name string, number int64, instanceIDs, outputNames []string) (instances, outputs map[string]graph.Hash, err error) {
	instances = make(map[string]graph.Hash, len(instanceIDs))
	outputs = make(map[string]graph.Hash, len(outputNames))
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM state_versions WHERE state_id = s.id AND number = $2)
			FROM states s WHERE s.name = $1`, name, number)
		if len(instanceIDs) > 0 {
			b.Queue(sqlInstanceHashesAt, name, number, instanceIDs)
		}
		if len(outputNames) > 0 {
			b.Queue(sqlOutputHashesAt, name, number, outputNames)
		}
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		var exists bool
		switch err := br.QueryRow().Scan(&exists); {
		case errors.Is(err, pgx.ErrNoRows):
			return notFound(name)
		case err != nil:
			return err
		case !exists:
			return fmt.Errorf("state %q has no version %d: %w", name, number, kilolock.ErrNotFound)
		}
		if len(instanceIDs) > 0 {
			if err := eachRow(br, scanHash(instances)); err != nil {
				return err
			}
		}
		if len(outputNames) > 0 {
			if err := eachRow(br, scanHash(outputs)); err != nil {
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return nil, nil, err
	}
	return instances, outputs, nil
}

// scanHash returns a row reader filling m with (key, hash) rows.
func scanHash(m map[string]graph.Hash) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var (
			key  string
			hash []byte
		)
		if err := rows.Scan(&key, &hash); err != nil {
			return err
		}
		if len(hash) != len(graph.Hash{}) {
			return corrupt("stored hash of %s is %d bytes: the database is corrupt", key, len(hash))
		}
		m[key] = graph.Hash(hash)
		return nil
	}
}

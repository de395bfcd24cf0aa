package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// sqlChangesSince lists the keys versions after ?2 changed: a version v
// changed a key iff it opened an interval of it (valid_from = v) or closed
// one (valid_to = v). Each branch is a range scan of the (state_id,
// valid_from) or (state_id, valid_to) index, so the cost is that of the
// rows returned, not of the state or its history; UNION drops the second
// row of a change, which both closes and opens an interval.
const sqlChangesSince = `SELECT c.version, v.lock_id, v.actor, c.output, c.id
FROM (
	SELECT valid_from AS version, 0 AS output, instance_id AS id FROM instance_intervals WHERE state_id = ?1 AND valid_from > ?2
	UNION
	SELECT valid_to, 0, instance_id FROM instance_intervals WHERE state_id = ?1 AND valid_to > ?2
	UNION
	SELECT valid_from, 1, name FROM output_intervals WHERE state_id = ?1 AND valid_from > ?2
	UNION
	SELECT valid_to, 1, name FROM output_intervals WHERE state_id = ?1 AND valid_to > ?2
) AS c
JOIN state_versions AS v ON v.state_id = ?1 AND v.number = c.version
ORDER BY c.version, c.output, c.id`

// ChangesSince lists what every version numbered above after changed: one
// record per instance ID or output name a version added, changed or
// removed, ordered by version, then instances before outputs, then ID (in
// byte order). An empty list when no version is above after. ErrNotFound
// when the state does not exist.
func (s *Store) ChangesSince(ctx context.Context, name string, after int64) ([]kilolock.ChangeRecord, error) {
	out := []kilolock.ChangeRecord{}
	err := s.view(ctx, "changes since", func(tx *sql.Tx) error {
		stateID, err := lookupState(ctx, tx, name)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, sqlChangesSince, stateID, after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r kilolock.ChangeRecord
			if err := rows.Scan(&r.Version, &r.LockID, &r.Actor, &r.Output, &r.ID); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// The hashes of keys at version ?2, the keys given as a JSON array in ?3.
// Intervals of one key never overlap, so the key is in the version iff
// the last interval that began at or before it has not ended by it. The
// correlated ORDER BY … DESC LIMIT 1 finds that interval with one probe of
// the primary key (state_id, key, valid_from), however often the key
// changed. CROSS JOIN keeps the list of keys the outer loop: with a plain
// JOIN, SQLite walks every interval of the state instead.
const (
	sqlInstanceHashesAt = `SELECT u.value, i.hash
FROM json_each(?3) AS u
CROSS JOIN instance_intervals AS i ON i.state_id = ?1 AND i.instance_id = u.value AND i.valid_from = (
	SELECT j.valid_from FROM instance_intervals AS j
	WHERE j.state_id = ?1 AND j.instance_id = u.value AND j.valid_from <= ?2
	ORDER BY j.valid_from DESC LIMIT 1)
WHERE i.valid_to IS NULL OR i.valid_to > ?2`
	sqlOutputHashesAt = `SELECT u.value, o.hash
FROM json_each(?3) AS u
CROSS JOIN output_intervals AS o ON o.state_id = ?1 AND o.name = u.value AND o.valid_from = (
	SELECT j.valid_from FROM output_intervals AS j
	WHERE j.state_id = ?1 AND j.name = u.value AND j.valid_from <= ?2
	ORDER BY j.valid_from DESC LIMIT 1)
WHERE o.valid_to IS NULL OR o.valid_to > ?2`
)

// HashesAt returns the hashes, in version number, of the given instance
// IDs and output names; a key the version does not hold is absent from the
// maps (which are never nil). Its cost is one index probe per key.
// ErrNotFound when the state or the version does not exist.
func (s *Store) HashesAt(ctx context.Context, name string, number int64, instanceIDs, outputNames []string) (instances, outputs map[string]graph.Hash, err error) {
	instances = make(map[string]graph.Hash, len(instanceIDs))
	outputs = make(map[string]graph.Hash, len(outputNames))
	err = s.view(ctx, "hashes at", func(tx *sql.Tx) error {
		stateID, err := lookupState(ctx, tx, name)
		if err != nil {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM state_versions WHERE state_id = ? AND number = ?`, stateID, number).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("state %q has no version %d: %w", name, number, kilolock.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := hashesAt(ctx, tx, sqlInstanceHashesAt, stateID, number, instanceIDs, instances); err != nil {
			return err
		}
		return hashesAt(ctx, tx, sqlOutputHashesAt, stateID, number, outputNames, outputs)
	})
	if err != nil {
		return nil, nil, err
	}
	return instances, outputs, nil
}

func hashesAt(ctx context.Context, tx *sql.Tx, query string, stateID, number int64, keys []string, into map[string]graph.Hash) error {
	if len(keys) == 0 {
		return nil
	}
	list, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, query, stateID, number, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key  string
			hash []byte
		)
		if err := rows.Scan(&key, &hash); err != nil {
			return err
		}
		if len(hash) != len(graph.Hash{}) {
			return fmt.Errorf("stored hash of %s is %d bytes: the database is corrupt", key, len(hash))
		}
		into[key] = graph.Hash(hash)
	}
	return rows.Err()
}

// lookupState returns the id of the state called name; ErrNotFound when
// there is none.
func lookupState(ctx context.Context, tx *sql.Tx, name string) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM states WHERE name = ?`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound(name)
	}
	return id, err
}

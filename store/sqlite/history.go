package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// VersionBySerial returns the newest version carrying serial, through the
// (state_id, serial, number) index. ErrNotFound when the state does not
// exist or no version has serial.
func (s *Store) VersionBySerial(ctx context.Context, name string, serial uint64) (*kilolock.Version, error) {
	var out *kilolock.Version
	err := s.view(ctx, "version by serial", func(tx *sql.Tx) error {
		stateID, err := lookupState(ctx, tx, name)
		if err != nil {
			return err
		}
		v, err := scanVersion(tx.QueryRowContext(ctx, `SELECT `+versionColumns+`
FROM state_versions AS v JOIN states AS s ON s.id = v.state_id
WHERE v.state_id = ? AND v.serial = ? ORDER BY v.number DESC LIMIT 1`, stateID, int64(serial)))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("state %q has no version with serial %d: %w", name, serial, kilolock.ErrNotFound)
		}
		out = v
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InstanceHistory lists the intervals of the instance objects at address
// (an instance or a resource address), ordered by valid_from, then ID. It
// range-scans the primary key (state_id, instance_id, valid_from) over
// kilolock.InstanceIDRange(address). ErrNotFound when the state does not
// exist.
func (s *Store) InstanceHistory(ctx context.Context, name, address string) ([]kilolock.InstanceInterval, error) {
	out := []kilolock.InstanceInterval{}
	err := s.view(ctx, "instance history", func(tx *sql.Tx) error {
		stateID, err := lookupState(ctx, tx, name)
		if err != nil {
			return err
		}
		lo, hi := kilolock.InstanceIDRange(address)
		rows, err := tx.QueryContext(ctx, `SELECT i.instance_id, i.module, i.mode, i.type, i.name, i.each, i.provider, i.hash, p.body, i.valid_from, coalesce(i.valid_to, 0)
FROM instance_intervals AS i JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
WHERE i.state_id = ? AND i.instance_id >= ? AND i.instance_id < ?
ORDER BY i.valid_from, i.instance_id`, stateID, lo, hi)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id         string
				r          graph.Resource
				hash, body []byte
				iv         kilolock.InstanceInterval
			)
			if err := rows.Scan(&id, &r.Module, &r.Mode, &r.Type, &r.Name, &r.Each, &r.Provider, &hash, &body, &iv.ValidFrom, &iv.ValidTo); err != nil {
				return err
			}
			if iv.Instance, err = graph.NewInstance(r, body); err != nil {
				return fmt.Errorf("stored instance %s: %v", id, err)
			}
			if string(iv.Instance.Hash[:]) != string(hash) {
				return fmt.Errorf("stored instance %s: its body does not hash to %x: the database is corrupt", id, hash)
			}
			if kilolock.MatchesAddress(&iv.Instance, address) {
				out = append(out, iv)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// VersionBySerial returns the newest version carrying serial, through the
// (state_id, serial, number) index. ErrNotFound when the state does not
// exist or no version has serial.
func (s *Store) VersionBySerial(ctx context.Context, name string, serial uint64) (*kilolock.Version, error) {
	var out *kilolock.Version
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`, name).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		v, err := scanVersion(tx.QueryRow(ctx, `SELECT `+versionColumns+`
			FROM state_versions v JOIN states s ON s.id = v.state_id
			WHERE v.state_id = `+sqlStateID+` AND v.serial = $2 ORDER BY v.number DESC LIMIT 1`, name, int64(serial)))
		if errors.Is(err, pgx.ErrNoRows) {
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
// (an instance or a resource address), ordered by valid_from, then ID in
// byte order. It range-scans the (state_id, instance_id COLLATE "C",
// valid_from) index over kilolock.InstanceIDRange(address). ErrNotFound
// when the state does not exist.
func (s *Store) InstanceHistory(ctx context.Context, name, address string) ([]kilolock.InstanceInterval, error) {
	out := []kilolock.InstanceInterval{}
	lo, hi := kilolock.InstanceIDRange(address)
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`, name).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound(name)
		}
		rows, err := tx.Query(ctx, `SELECT i.instance_id, i.module, i.mode, i.type, i.name, i.each, i.provider, i.hash, p.body, i.valid_from, coalesce(i.valid_to, 0)
			FROM instance_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
			WHERE i.state_id = `+sqlStateID+` AND i.instance_id COLLATE "C" >= $2 AND i.instance_id COLLATE "C" < $3
			ORDER BY i.valid_from, i.instance_id COLLATE "C"`, name, lo, hi)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id   string
				r    graph.Resource
				hash []byte
				body string
				iv   kilolock.InstanceInterval
			)
			if err := rows.Scan(&id, &r.Module, &r.Mode, &r.Type, &r.Name, &r.Each, &r.Provider, &hash, &body, &iv.ValidFrom, &iv.ValidTo); err != nil {
				return err
			}
			if iv.Instance, err = graph.NewInstance(r, []byte(body)); err != nil {
				return corrupt("stored instance %s: %v", id, err)
			}
			if string(iv.Instance.Hash[:]) != string(hash) {
				return corrupt("stored instance %s: its body does not hash to %x: the database is corrupt", id, hash)
			}
			if kilolock.MatchesAddress(&iv.Instance, address) {
				out = append(out, iv)
			}
		}
		sortIntervals(out)
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

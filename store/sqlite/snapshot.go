package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

const versionColumns = `v.id, s.name, v.number, v.serial, v.lineage, v.terraform_version, v.source, v.actor,
	v.lock_id, v.base_serial, v.created_at, v.added, v.changed, v.removed, v.instance_count, v.format`

func scanVersion(sc interface{ Scan(...any) error }, extra ...any) (*kilolock.Version, error) {
	var (
		v                  kilolock.Version
		serial, baseSerial int64
		source, created    string
	)
	dest := []any{&v.ID, &v.State, &v.Number, &serial, &v.Lineage, &v.TerraformVersion, &source, &v.Actor,
		&v.LockID, &baseSerial, &created, &v.Added, &v.Changed, &v.Removed, &v.Instances, &v.Format}
	if err := sc.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	v.Serial, v.BaseSerial, v.Source = uint64(serial), uint64(baseSerial), kilolock.Source(source)
	var err error
	if v.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	return &v, nil
}

// Snapshot loads version number of a state: its record, the instance
// objects and outputs valid at it (ordered by instance ID and by name), its
// check results and raw document. ErrNotFound when the state or the version
// does not exist.
func (s *Store) Snapshot(ctx context.Context, name string, number int64) (*kilolock.Snapshot, error) {
	snap := &kilolock.Snapshot{}
	err := s.view(ctx, "snapshot", func(tx *sql.Tx) error {
		var (
			stateID, current int64
			checks           sql.NullString
		)
		v, err := scanVersion(tx.QueryRowContext(ctx, `SELECT `+versionColumns+`, s.id, s.current_version, v.check_results
FROM state_versions AS v JOIN states AS s ON s.id = v.state_id
WHERE s.name = ? AND v.number = ?`, name, number), &stateID, &current, &checks)
		if errors.Is(err, sql.ErrNoRows) {
			if err := tx.QueryRowContext(ctx, `SELECT id FROM states WHERE name = ?`, name).Scan(&stateID); errors.Is(err, sql.ErrNoRows) {
				return notFound(name)
			} else if err != nil {
				return err
			}
			return fmt.Errorf("state %q has no version %d: %w", name, number, kilolock.ErrNotFound)
		}
		if err != nil {
			return err
		}
		snap.Version = *v
		if checks.Valid {
			snap.CheckResults = []byte(checks.String)
		}
		if err := tx.QueryRowContext(ctx, `SELECT raw FROM version_raw WHERE version_id = ?`, v.ID).Scan(&snap.Raw); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}

		// The current version reads the current intervals through their
		// partial indexes; an older one filters every interval that began
		// at or before it.
		valid := `i.valid_from <= ? AND (i.valid_to IS NULL OR i.valid_to > ?)`
		args := []any{stateID, number, number}
		if number == current {
			valid, args = `i.valid_to IS NULL`, []any{stateID}
		}
		snap.Instances, err = loadInstances(ctx, tx, valid, args, v.Instances)
		if err != nil {
			return err
		}
		snap.Outputs, err = loadOutputs(ctx, tx, valid, args)
		return err
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

func loadInstances(ctx context.Context, tx *sql.Tx, valid string, args []any, count int) ([]kilolock.Instance, error) {
	rows, err := tx.QueryContext(ctx, `SELECT i.instance_id, i.module, i.mode, i.type, i.name, i.each, i.provider, i.hash, p.body
FROM instance_intervals AS i JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
WHERE i.state_id = ? AND `+valid+` ORDER BY i.instance_id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]kilolock.Instance, 0, max(count, 0))
	for rows.Next() {
		var (
			id         string
			r          graph.Resource
			hash, body []byte
		)
		if err := rows.Scan(&id, &r.Module, &r.Mode, &r.Type, &r.Name, &r.Each, &r.Provider, &hash, &body); err != nil {
			return nil, err
		}
		inst, err := graph.NewInstance(r, body)
		if err != nil {
			return nil, fmt.Errorf("stored instance %s: %v", id, err)
		}
		if string(inst.Hash[:]) != string(hash) {
			return nil, fmt.Errorf("stored instance %s: its body does not hash to %x: the database is corrupt", id, hash)
		}
		out = append(out, inst)
	}
	return out, rows.Err()
}

func loadOutputs(ctx context.Context, tx *sql.Tx, valid string, args []any) ([]kilolock.Output, error) {
	rows, err := tx.QueryContext(ctx, `SELECT i.name, p.body
FROM output_intervals AS i JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
WHERE i.state_id = ? AND `+valid+` ORDER BY i.name`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []kilolock.Output{}
	for rows.Next() {
		var (
			name string
			body []byte
		)
		if err := rows.Scan(&name, &body); err != nil {
			return nil, err
		}
		out = append(out, graph.NewOutput(name, body))
	}
	return out, rows.Err()
}

// History lists versions newest first: at most opts.Limit (50 when 0 or
// less), only those numbered below opts.Before when it is above 0.
// ErrNotFound when the state does not exist; an empty list when it has no
// versions.
func (s *Store) History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	before := opts.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	out := []kilolock.Version{}
	err := s.view(ctx, "history", func(tx *sql.Tx) error {
		var stateID int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM states WHERE name = ?`, name).Scan(&stateID); errors.Is(err, sql.ErrNoRows) {
			return notFound(name)
		} else if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+versionColumns+`
FROM state_versions AS v JOIN states AS s ON s.id = v.state_id
WHERE v.state_id = ? AND v.number < ? ORDER BY v.number DESC LIMIT ?`, stateID, before, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scanVersion(rows)
			if err != nil {
				return err
			}
			out = append(out, *v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

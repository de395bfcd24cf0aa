package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

const versionColumns = `v.id, s.name, v.number, v.serial, v.lineage, v.terraform_version, v.source, v.actor,
	v.lock_id, v.base_serial, v.created_at, v.added, v.changed, v.removed, v.instance_count, v.format`

func scanVersion(row pgx.Row, extra ...any) (*kilolock.Version, error) {
	var (
		v                  kilolock.Version
		serial, baseSerial int64
		source             string
	)
	dest := []any{&v.ID, &v.State, &v.Number, &serial, &v.Lineage, &v.TerraformVersion, &source, &v.Actor,
		&v.LockID, &baseSerial, &v.Created, &v.Added, &v.Changed, &v.Removed, &v.Instances, &v.Format}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	v.Serial, v.BaseSerial, v.Source = uint64(serial), uint64(baseSerial), kilolock.Source(source)
	v.Created = v.Created.UTC()
	return &v, nil
}

// Snapshot loads version number of a state: its record, the instance
// objects and outputs valid at it (ordered by instance ID and by name), its
// check results and raw document. ErrNotFound when the state or the version
// does not exist.
//
// It reads in one REPEATABLE READ snapshot and one round trip: the version
// row, then the intervals valid at number. The current version reads the
// current intervals through their partial unique indexes; an older one
// filters the intervals that began at or before it.
func (s *Store) Snapshot(ctx context.Context, name string, number int64) (*kilolock.Snapshot, error) {
	snap := &kilolock.Snapshot{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var (
			stateID, current int64
			checks           *string
		)
		v, err := scanVersion(tx.QueryRow(ctx, `SELECT `+versionColumns+`, s.id, s.current_version, v.check_results, r.raw
			FROM state_versions v JOIN states s ON s.id = v.state_id
			LEFT JOIN version_raw r ON r.version_id = v.id
			WHERE s.name = $1 AND v.number = $2`, name, number), &stateID, &current, &checks, &snap.Raw)
		if errors.Is(err, pgx.ErrNoRows) {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`, name).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return notFound(name)
			}
			return fmt.Errorf("state %q has no version %d: %w", name, number, kilolock.ErrNotFound)
		}
		if err != nil {
			return err
		}
		snap.Version = *v
		if checks != nil {
			snap.CheckResults = []byte(*checks)
		}

		valid := `i.valid_from <= $2 AND (i.valid_to IS NULL OR i.valid_to > $2)`
		args := []any{stateID, number}
		if number == current {
			valid, args = `i.valid_to IS NULL`, []any{stateID}
		}
		b := &pgx.Batch{}
		b.Queue(`SELECT i.instance_id, i.module, i.mode, i.type, i.name, i.each, i.provider, i.hash, p.body
			FROM instance_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
			WHERE i.state_id = $1 AND `+valid+` ORDER BY i.instance_id COLLATE "C"`, args...)
		b.Queue(`SELECT i.name, p.body
			FROM output_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
			WHERE i.state_id = $1 AND `+valid+` ORDER BY i.name COLLATE "C"`, args...)
		br := tx.SendBatch(ctx, b)
		defer br.Close()

		snap.Instances = make([]kilolock.Instance, 0, max(v.Instances, 0))
		if err := eachRow(br, func(rows pgx.Rows) error {
			var (
				id   string
				r    graph.Resource
				hash []byte
				body string
			)
			if err := rows.Scan(&id, &r.Module, &r.Mode, &r.Type, &r.Name, &r.Each, &r.Provider, &hash, &body); err != nil {
				return err
			}
			inst, err := graph.NewInstance(r, []byte(body))
			if err != nil {
				return corrupt("stored instance %s: %v", id, err)
			}
			if string(inst.Hash[:]) != string(hash) {
				return corrupt("stored instance %s: its body does not hash to %x: the database is corrupt", id, hash)
			}
			snap.Instances = append(snap.Instances, inst)
			return nil
		}); err != nil {
			return err
		}
		sortInstances(snap.Instances)
		snap.Outputs = []kilolock.Output{}
		if err := eachRow(br, func(rows pgx.Rows) error {
			var name, body string
			if err := rows.Scan(&name, &body); err != nil {
				return err
			}
			snap.Outputs = append(snap.Outputs, graph.NewOutput(name, []byte(body)))
			return nil
		}); err != nil {
			return err
		}
		sortOutputs(snap.Outputs)
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
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
	q := psql.Select(versionColumns).
		From("state_versions v").Join("states s ON s.id = v.state_id").
		Where("s.name = ?", name).
		OrderBy("v.number DESC").Limit(uint64(limit))
	if opts.Before > 0 {
		q = q.Where("v.number < ?", opts.Before)
	}
	sql, args, err := q.ToSql()
	if err != nil {
		return nil, err
	}
	out := []kilolock.Version{}
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`, name)
		b.Queue(sql, args...)
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
			v, err := scanVersion(rows)
			if err == nil {
				out = append(out, *v)
			}
			return err
		}); err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kilolock/kilolock/drift"
)

var _ drift.DriftStore = (*Store)(nil)

// openDrift is the condition of an open drift record d, as the view
// resource_drift has it: no later check closed it, and no version after
// the one checked changed its instance.
const openDrift = `d.closed_by IS NULL AND NOT EXISTS (SELECT 1 FROM instance_intervals i
	WHERE i.state_id = d.state_id AND i.instance_id = d.instance_id AND (i.valid_from > d.version OR i.valid_to > d.version))`

// RecordDrift stores a check and closes the open records of its scope, in
// one transaction.
func (s *Store) RecordDrift(ctx context.Context, state string, c *drift.DriftCheck) error {
	c.Checked = now()
	var scope any // NULL: the whole state
	if c.Scope != nil {
		b, err := json.Marshal(c.Scope)
		if err != nil {
			return err
		}
		scope = string(b)
	}
	rows := make([][]any, len(c.Drifted))
	for i := range c.Drifted {
		d := &c.Drifted[i]
		changes, err := json.Marshal(d.Changes)
		if err != nil {
			return fmt.Errorf("encode drift of %s: %w", d.Address, err)
		}
		rows[i] = []any{nil, nil, d.InstanceID, d.Address, d.Type, d.Kind, string(changes), c.Version}
	}
	err := s.write(ctx, "record drift", func(tx Tx) error {
		stateID, err := versionState(ctx, tx, state, c.Version)
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO drift_checks (state_id, version, checked_at, actor, scope, drifted) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
			stateID, c.Version, c.Checked, c.Actor, scope, int64(len(c.Drifted))).Scan(&c.ID); err != nil {
			return err
		}
		b := &Batch{}
		if c.Scope == nil {
			b.Exec(nil, `UPDATE drift_records SET closed_by = $2 WHERE state_id = $1 AND closed_by IS NULL`, stateID, c.ID)
		} else {
			b.Exec(nil, `UPDATE drift_records SET closed_by = $2 WHERE state_id = $1 AND closed_by IS NULL
				AND instance_id IN (SELECT k FROM {texts $3} AS u)`, stateID, c.ID, c.Scope)
		}
		if len(rows) > 0 {
			for _, r := range rows {
				r[0], r[1] = c.ID, stateID
			}
			b.Insert(func(int64) error { return nil }, "drift_records", []string{"check_id", "state_id", "instance_id", "address", "type", "kind", "changes", "version"}, rows)
		}
		return tx.Send(ctx, b)
	})
	if err == nil {
		for i := range c.Drifted {
			d := &c.Drifted[i]
			d.Check, d.Checked, d.Actor, d.Version = c.ID, c.Checked, c.Actor, c.Version
		}
	}
	return err
}

// Drift lists a state's open drift records by address.
func (s *Store) Drift(ctx context.Context, state string) ([]drift.DriftRecord, error) {
	out, err := ofState(ctx, s, "drift", state, func(r Rows, d *drift.DriftRecord) (bool, error) {
		var changes string
		if err := r.Scan(&d.InstanceID, &d.Address, &d.Type, &d.Kind, &changes, &d.Version, &d.Check, &d.Checked, &d.Actor); err != nil {
			return false, err
		}
		if err := json.Unmarshal([]byte(changes), &d.Changes); err != nil {
			return false, corrupt("stored drift of %s: %v", d.Address, err)
		}
		return true, nil
	}, `SELECT d.instance_id, d.address, d.type, d.kind, d.changes, d.version, c.id, c.checked_at, c.actor
		FROM drift_records d JOIN drift_checks c ON c.id = d.check_id
		WHERE d.state_id = `+sqlStateID+` AND `+openDrift+`
		ORDER BY d.address{C}, d.instance_id{C}`, state)
	if err != nil {
		return nil, err
	}
	if s.resort {
		sortDrift(out)
	}
	return out, nil
}

// DriftCounts counts the open drift records of the states ever checked.
func (s *Store) DriftCounts(ctx context.Context, names []string) (map[string]int, error) {
	sql := `SELECT s.name, (SELECT count(*) FROM drift_records d WHERE d.state_id = s.id AND ` + openDrift + `)
		FROM states s WHERE EXISTS (SELECT 1 FROM drift_checks c WHERE c.state_id = s.id)`
	var args []any
	if names != nil {
		sql += ` AND s.name IN (SELECT k FROM {texts $1} AS u)`
		args = append(args, names)
	}
	out := map[string]int{}
	err := s.read(ctx, "drift counts", func(tx Tx) error {
		clear(out)
		rows, err := tx.Query(ctx, sql, args...)
		return EachRow(rows, err, func(r Rows) error {
			var name string
			var n int64
			if err := r.Scan(&name, &n); err != nil {
				return err
			}
			out[name] = int(n)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sortDrift puts records in byte order of address, then instance ID.
func sortDrift(ds []drift.DriftRecord) {
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].Address != ds[j].Address {
			return ds[i].Address < ds[j].Address
		}
		return ds[i].InstanceID < ds[j].InstanceID
	})
}

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"
)

// stateRow is a states row with its holders, as a transaction read it.
type stateRow struct {
	id   int64
	info kilolock.StateInfo
	// instances is the instance count of the current version.
	instances int
}

const stateColumns = `s.id, s.name, s.created_at, s.lineage, s.current_version, s.current_version_id,
	s.serial, s.lock_mode, s.allow_lineage_change, coalesce(v.instance_count, 0)`

const stateFrom = `FROM states AS s LEFT JOIN state_versions AS v ON v.id = s.current_version_id`

func scanState(sc interface{ Scan(...any) error }) (*stateRow, error) {
	var (
		st      stateRow
		created string
		serial  int64
		mode    string
	)
	err := sc.Scan(&st.id, &st.info.Name, &created, &st.info.Lineage, &st.info.Current, &st.info.CurrentID,
		&serial, &mode, &st.info.AllowLineageChange, &st.instances)
	if err != nil {
		return nil, err
	}
	if st.info.Created, err = parseTime(created); err != nil {
		return nil, err
	}
	st.info.Serial = uint64(serial)
	st.info.LockMode = kilolock.LockMode(mode)
	st.info.Locks = []kilolock.Lock{}
	return &st, nil
}

// loadState reads the state called name and its locks; ErrNotFound when
// there is no such state.
func loadState(ctx context.Context, tx *sql.Tx, name string) (*stateRow, error) {
	st, err := scanState(tx.QueryRowContext(ctx, `SELECT `+stateColumns+` `+stateFrom+` WHERE s.name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(name)
	}
	if err != nil {
		return nil, err
	}
	st.info.Locks, err = loadLocks(ctx, tx, `WHERE state_id = ?`, st.id)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// loadOrCreateState is loadState, creating the state in mode when missing.
func loadOrCreateState(ctx context.Context, tx *sql.Tx, name string, mode kilolock.LockMode) (*stateRow, error) {
	st, err := loadState(ctx, tx, name)
	if !errors.Is(err, kilolock.ErrNotFound) {
		return st, err
	}
	created := now()
	res, err := tx.ExecContext(ctx, `INSERT INTO states (name, created_at, lock_mode) VALUES (?, ?, ?)`,
		name, formatTime(created), string(mode))
	if err != nil {
		return nil, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	return &stateRow{id: id, info: kilolock.StateInfo{
		Name: name, Created: created, LockMode: mode, Locks: []kilolock.Lock{},
	}}, nil
}

// loadLocks reads locks in the order they were taken, the first being the
// holder a refusal names.
func loadLocks(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]kilolock.Lock, error) {
	locks, _, err := loadLocksByState(ctx, tx, where, args...)
	return locks, err
}

func loadLocksByState(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]kilolock.Lock, []int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT state_id, info, base_version, base_serial, acquired_at FROM locks `+
		where+` ORDER BY state_id, acquired_at, rowid`, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	locks := []kilolock.Lock{}
	var states []int64
	for rows.Next() {
		var (
			l        kilolock.Lock
			stateID  int64
			info     string
			serial   int64
			acquired string
		)
		if err := rows.Scan(&stateID, &info, &l.BaseVersion, &serial, &acquired); err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal([]byte(info), &l.Info); err != nil {
			return nil, nil, fmt.Errorf("stored lock info: %v", err)
		}
		l.BaseSerial = uint64(serial)
		if l.Acquired, err = parseTime(acquired); err != nil {
			return nil, nil, err
		}
		locks = append(locks, l)
		states = append(states, stateID)
	}
	return locks, states, rows.Err()
}

// State returns the state and its current holders. ErrNotFound when the
// state was never locked or written.
func (s *Store) State(ctx context.Context, name string) (*kilolock.StateInfo, error) {
	var st *stateRow
	err := s.view(ctx, "state", func(tx *sql.Tx) (err error) {
		st, err = loadState(ctx, tx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &st.info, nil
}

// States lists every state with its holders, by name.
func (s *Store) States(ctx context.Context) ([]kilolock.StateInfo, error) {
	var out []kilolock.StateInfo
	err := s.view(ctx, "list states", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+stateColumns+` `+stateFrom+` ORDER BY s.name`)
		if err != nil {
			return err
		}
		defer rows.Close()
		index := map[int64]int{}
		for rows.Next() {
			st, err := scanState(rows)
			if err != nil {
				return err
			}
			index[st.id] = len(out)
			out = append(out, st.info)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		locks, states, err := loadLocksByState(ctx, tx, "")
		if err != nil {
			return err
		}
		for i, l := range locks {
			if j, ok := index[states[i]]; ok {
				out[j].Locks = append(out[j].Locks, l)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []kilolock.StateInfo{}
	}
	return out, nil
}

// SetLockMode changes the lock mode, creating the state in mode when
// missing. While any lock is held it changes nothing and refuses with a
// *kilolock.ConflictError (Reason kilolock.ReasonLocksHeld) naming the
// holders: an exclusive holder must not find company, and optimistic
// holders must not find themselves under an exclusive rule they did not
// lock under. An unknown mode is ErrInvalid.
func (s *Store) SetLockMode(ctx context.Context, name string, mode kilolock.LockMode) error {
	if err := kilolock.ValidLockMode(mode); err != nil {
		return err
	}
	return s.update(ctx, "set lock mode", func(tx *sql.Tx) error {
		st, err := loadOrCreateState(ctx, tx, name, mode)
		if err != nil {
			return err
		}
		if len(st.info.Locks) > 0 {
			return kilolock.CheckLockMode(&st.info)
		}
		if st.info.LockMode == mode {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE states SET lock_mode = ? WHERE id = ?`, string(mode), st.id)
		return err
	})
}

// SetAllowLineageChange lets the next writes to a state carry another
// lineage. ErrNotFound when the state does not exist.
func (s *Store) SetAllowLineageChange(ctx context.Context, name string, allow bool) error {
	return s.update(ctx, "set allow lineage change", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE states SET allow_lineage_change = ? WHERE name = ?`, allow, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return firstErr(err, notFound(name))
		}
		return nil
	})
}

// Delete removes a state with its versions, payloads and locks, when
// kilolock.CheckDelete allows it in the same transaction. ErrNotFound when
// it does not exist. Version ids are not reused.
func (s *Store) Delete(ctx context.Context, name string, opts kilolock.DeleteOptions) (versions int64, err error) {
	err = s.update(ctx, "delete state", func(tx *sql.Tx) error {
		st, err := loadState(ctx, tx, name)
		if err != nil {
			return err
		}
		if err := kilolock.CheckDelete(&st.info, opts); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM states WHERE id = ?`, st.id); err != nil {
			return err
		}
		versions = st.info.Current
		return nil
	})
	return versions, err
}

// firstErr returns err when it is not nil, else fallback.
func firstErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// CurrentVersion returns the id and number of the state's current version
// with one statement on the read pool, outside any transaction.
func (s *Store) CurrentVersion(ctx context.Context, name string) (id, number int64, err error) {
	err = s.read.QueryRowContext(ctx, `SELECT current_version_id, current_version FROM states WHERE name = ?`, name).Scan(&id, &number)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, notFound(name)
	}
	if err != nil {
		return 0, 0, translate("current version", err)
	}
	return id, number, nil
}

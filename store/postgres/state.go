package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"

	"github.com/kilolock/kilolock"
)

const stateColumns = `s.id, s.name, s.created_at, s.lineage, s.current_version, s.current_version_id, s.serial,
	s.lock_mode, s.allow_lineage_change, coalesce(v.instance_count, 0)`

// lockedStateColumns are stateColumns without the join, for FOR UPDATE.
const lockedStateColumns = `s.id, s.name, s.created_at, s.lineage, s.current_version, s.current_version_id, s.serial,
	s.lock_mode, s.allow_lineage_change, 0`

// stateRow is a states row with the state's locks.
type stateRow struct {
	id int64
	kilolock.StateInfo
	instances int // the instance count of the current version
	created   bool
}

func scanState(row pgx.Row) (*stateRow, error) {
	var (
		st     stateRow
		serial int64
		mode   string
	)
	err := row.Scan(&st.id, &st.Name, &st.Created, &st.Lineage, &st.Current, &st.CurrentID, &serial, &mode,
		&st.AllowLineageChange, &st.instances)
	if err != nil {
		return nil, err
	}
	st.Created = st.Created.UTC()
	st.Serial = uint64(serial)
	st.LockMode = kilolock.LockMode(mode)
	st.Locks = []kilolock.Lock{}
	return &st, nil
}

const lockColumns = `l.info, l.base_version, l.base_serial, l.acquired_at`

func scanLock(row pgx.Row, extra ...any) (kilolock.Lock, error) {
	var (
		l      kilolock.Lock
		info   string
		serial int64
	)
	if err := row.Scan(append([]any{&info, &l.BaseVersion, &serial, &l.Acquired}, extra...)...); err != nil {
		return l, err
	}
	if err := json.Unmarshal([]byte(info), &l.Info); err != nil {
		return l, corrupt("lock info %q: %v", info, err)
	}
	l.BaseSerial = uint64(serial)
	l.Acquired = l.Acquired.UTC()
	return l, nil
}

// lockOrder is the order of a state's locks: the first is the one reported
// as the holder.
const lockOrder = `ORDER BY l.acquired_at, l.lock_id COLLATE "C"`

// lookup is a query lockState sends in its batch, after the locks: it
// sees what the last holder of the state's row lock committed.
type lookup struct {
	sql  string
	args []any
	row  func(pgx.Rows) error // called for each row
}

// lockState locks the states row of name FOR UPDATE, reads its locks and
// runs the lookups, all in one round trip. With create, a missing state is
// created first (in mode); without, a missing state gives ErrNotFound.
//
// Under READ COMMITTED each statement sees what was committed when it
// started, so what is read after the row lock is granted is what the
// previous holder of the row lock left.
func lockState(ctx context.Context, tx pgx.Tx, name string, create bool, mode kilolock.LockMode, lookups ...lookup) (*stateRow, error) {
	b := &pgx.Batch{}
	if create {
		b.Queue(`INSERT INTO states (name, lock_mode) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, string(mode))
	}
	// No join here: when the row lock had to wait for another transaction
	// that updated the row, PostgreSQL re-checks the new row version but
	// would not re-read a joined one. The statements after it take a new
	// snapshot and read the rest.
	b.Queue(`SELECT `+lockedStateColumns+` FROM states s WHERE s.name = $1 FOR UPDATE`, name)
	b.Queue(`SELECT v.instance_count FROM states s JOIN state_versions v ON v.id = s.current_version_id WHERE s.name = $1`, name)
	b.Queue(`SELECT `+lockColumns+` FROM locks l JOIN states s ON s.id = l.state_id WHERE s.name = $1 `+lockOrder, name)
	for _, q := range lookups {
		b.Queue(q.sql, q.args...)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	created := false
	if create {
		tag, err := br.Exec()
		if err != nil {
			return nil, err
		}
		created = tag.RowsAffected() == 1
	}
	st, err := scanState(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
		if create {
			return nil, errRetry // deleted between our insert and our lock
		}
		return nil, notFound(name)
	}
	if err != nil {
		return nil, err
	}
	st.created = created
	if err := eachRow(br, func(rows pgx.Rows) error { return rows.Scan(&st.instances) }); err != nil {
		return nil, err
	}
	if err := eachRow(br, func(rows pgx.Rows) error {
		l, err := scanLock(rows)
		st.Locks = append(st.Locks, l)
		return err
	}); err != nil {
		return nil, err
	}
	for _, q := range lookups {
		if err := eachRow(br, q.row); err != nil {
			return nil, err
		}
	}
	return st, br.Close()
}

// eachRow reads the next result of a batch, calling fn for each row.
func eachRow(br pgx.BatchResults, fn func(pgx.Rows) error) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func notFound(name string) error {
	return fmt.Errorf("state %q: %w", name, kilolock.ErrNotFound)
}

// State returns the state and its current holders. ErrNotFound when the
// state does not exist.
func (s *Store) State(ctx context.Context, name string) (*kilolock.StateInfo, error) {
	var st *kilolock.StateInfo
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		all, err := readStates(ctx, tx, name)
		if err != nil {
			return err
		}
		if len(all) == 0 {
			return notFound(name)
		}
		st = &all[0]
		return nil
	})
	return st, err
}

// States lists every state with its holders, by name.
func (s *Store) States(ctx context.Context) ([]kilolock.StateInfo, error) {
	all := []kilolock.StateInfo{}
	err := s.readTx(ctx, func(tx pgx.Tx) (err error) {
		all, err = readStates(ctx, tx, "")
		return err
	})
	return all, err
}

// readStates reads one state (name != "") or all of them, with their locks.
func readStates(ctx context.Context, tx pgx.Tx, name string) ([]kilolock.StateInfo, error) {
	states := psql.Select(stateColumns).From("states s").LeftJoin("state_versions v ON v.id = s.current_version_id").OrderBy(`s.name COLLATE "C"`)
	locks := psql.Select(lockColumns, "s.name").From("locks l").Join("states s ON s.id = l.state_id").OrderBy(`s.name COLLATE "C"`, "l.acquired_at", `l.lock_id COLLATE "C"`)
	if name != "" {
		states = states.Where("s.name = ?", name)
		locks = locks.Where("s.name = ?", name)
	}
	b := &pgx.Batch{}
	for _, q := range []sq.Sqlizer{states, locks} {
		sql, args, err := q.ToSql()
		if err != nil {
			return nil, err
		}
		b.Queue(sql, args...)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()

	all := []kilolock.StateInfo{}
	index := map[string]int{}
	if err := eachRow(br, func(rows pgx.Rows) error {
		st, err := scanState(rows)
		if err != nil {
			return err
		}
		index[st.Name] = len(all)
		all = append(all, st.StateInfo)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := eachRow(br, func(rows pgx.Rows) error {
		var owner string
		l, err := scanLock(rows, &owner)
		if i, ok := index[owner]; ok && err == nil {
			all[i].Locks = append(all[i].Locks, l)
		}
		return err
	}); err != nil {
		return nil, err
	}
	return all, br.Close()
}

// SetLockMode changes the lock mode, creating the state in mode when
// missing. While any lock is held it changes nothing and refuses with a
// *kilolock.ConflictError (Reason kilolock.ReasonLocksHeld) naming the
// holders: an exclusive holder must not find company, and optimistic
// holders must not find themselves under an exclusive rule they did not
// lock under. The state's row lock orders it with Lock. An unknown mode is
// ErrInvalid.
func (s *Store) SetLockMode(ctx context.Context, name string, mode kilolock.LockMode) error {
	if err := kilolock.ValidLockMode(mode); err != nil {
		return err
	}
	return s.inTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		st, err := lockState(ctx, tx, name, true, mode)
		switch {
		case err != nil:
			return err
		case len(st.Locks) > 0:
			return kilolock.CheckLockMode(&st.StateInfo)
		case st.created || st.LockMode == mode:
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE states SET lock_mode = $2 WHERE id = $1`, st.id, string(mode))
		return err
	})
}

// SetAllowLineageChange sets whether writes may change the state's lineage.
// ErrNotFound when the state does not exist.
func (s *Store) SetAllowLineageChange(ctx context.Context, name string, allow bool) error {
	return s.inTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE states SET allow_lineage_change = $2 WHERE name = $1`, name, allow)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return notFound(name)
		}
		return nil
	})
}

// Delete removes a state with its history and locks (the foreign keys
// cascade), when kilolock.CheckDelete allows it under the state's row
// lock. ErrNotFound when it does not exist.
func (s *Store) Delete(ctx context.Context, name string, opts kilolock.DeleteOptions) (versions int64, err error) {
	err = s.inTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		st, err := lockState(ctx, tx, name, false, "")
		if err != nil {
			return err
		}
		if err := kilolock.CheckDelete(&st.StateInfo, opts); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM states WHERE id = $1`, st.id); err != nil {
			return err
		}
		versions = st.Current
		return nil
	})
	return versions, err
}

// CurrentVersion returns the id and number of the state's current version
// with one statement, outside any transaction (pgx caches its plan).
func (s *Store) CurrentVersion(ctx context.Context, name string) (id, number int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT current_version_id, current_version FROM states WHERE name = $1`, name).Scan(&id, &number)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, notFound(name)
	}
	if err != nil {
		return 0, 0, translate(err)
	}
	return id, number, nil
}

package sqlstore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/storekit"
)

// stateRow is a states row with the state's locks.
type stateRow struct {
	id int64
	kilolock.State
	created bool
}

// versionCounts are the instance count of a state's current version and
// its managed count (quota.Counts), which a commit adds to.
type versionCounts struct {
	instances int
	managed   int64
}

// queueVersionCounts queues the read of the counts of state name's
// current version into c (zero before its first): after lockState's
// queries, under the state's row lock, for a commit only; a lock or an
// unlock pays no statement for them.
func queueVersionCounts(b *Batch, name string, c *versionCounts) {
	b.Query(func(r Rows) error { return r.Scan(&c.instances, &c.managed) },
		`SELECT v.instance_count, v.managed_count FROM states s JOIN state_versions v ON v.id = s.current_version_id WHERE s.name = $1`, name)
}

// stateColumns are what scanState reads. The environment's setting comes
// along (a state of the local lane has no environment): CheckCommit
// decides on it in the commit's transaction.
const stateColumns = `s.id, s.name, s.created_at, s.lineage, s.current_version, s.current_version_id, s.serial,
	s.lock_mode, s.allow_lineage_change, s.shared_plan_locks, s.require_client_encryption,
	COALESCE((SELECT e.require_client_encryption FROM environments e WHERE e.public_id = s.environment_id), false),
	s.client_encryption`

func scanState(row Row, extra ...any) (*stateRow, error) {
	var (
		st     stateRow
		serial int64
		mode   string
		enc    *string
	)
	dest := []any{&st.id, &st.Name, &st.Created, &st.Lineage, &st.Current, &st.CurrentID, &serial, &mode, &st.AllowLineageChange,
		&st.SharedPlanLocks, &st.RequireClientEncryption, &st.EnvironmentRequiresClientEncryption, &enc}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	st.Serial = uint64(serial)
	st.LockMode = kilolock.LockMode(mode)
	st.Locks = []kilolock.Lock{}
	if enc != nil {
		st.ClientEncryption = new(kilolock.ClientEncryption)
		if err := json.Unmarshal([]byte(*enc), st.ClientEncryption); err != nil {
			return nil, corrupt("stored client encryption %q of state %s: %v", *enc, st.Name, err)
		}
	}
	return &st, nil
}

const lockColumns = `l.info, l.base_version, l.base_serial, l.acquired_at, l.shared, l.run_id`

func scanLock(row Row, extra ...any) (kilolock.Lock, error) {
	var (
		l      kilolock.Lock
		info   string
		serial int64
	)
	if err := row.Scan(append([]any{&info, &l.BaseVersion, &serial, &l.Acquired, &l.Shared, &l.Run}, extra...)...); err != nil {
		return l, err
	}
	if err := json.Unmarshal([]byte(info), &l.Info); err != nil {
		return l, corrupt("stored lock info %q: %v", info, err)
	}
	l.BaseSerial = uint64(serial)
	return l, nil
}

// lockOrder is the order of a state's locks, the order they were taken:
// the first is the holder a refusal names.
const lockOrder = `ORDER BY l.acquired_at, l.lock_id{C}`

// lockState locks the states row of name (SELECT … FOR UPDATE on
// PostgreSQL; SQLite's write transaction holds the database's write lock
// already), reads its locks, and queues more after them, all in one batch.
// With create, a missing state is created first (in mode); without, a
// missing state gives ErrNotFound.
//
// Under PostgreSQL's READ COMMITTED each statement sees what was committed
// when it started, so what is read after the row lock is granted is what
// the previous holder of the row lock left.
func lockState(ctx context.Context, tx Tx, name string, create bool, mode kilolock.LockMode, more *Batch) (*stateRow, error) {
	b := &Batch{}
	var created int64
	if create {
		// NOT EXISTS first: a state that exists (nearly every call) costs
		// one probe of the name, not a row built (its id drawn from the
		// sequence, its environment computed) to be thrown away by ON
		// CONFLICT, which still settles a race of two creators.
		b.Exec(func(n int64) error { created = n; return nil },
			`INSERT INTO states (name, lock_mode, created_at) SELECT $1, $2, {now}
			WHERE NOT EXISTS (SELECT 1 FROM states WHERE name = $1) ON CONFLICT (name) DO NOTHING`, name, string(mode))
	}
	var st *stateRow
	// No join here: when the row lock had to wait for another transaction
	// that updated the row, PostgreSQL re-checks the new row version but
	// would not re-read a joined one. The statements after it take a new
	// snapshot and read the rest.
	b.Query(func(r Rows) (err error) { st, err = scanState(r); return err },
		`SELECT `+stateColumns+` FROM states s WHERE s.name = $1{forupdate}`, name)
	var locks []kilolock.Lock
	b.Query(func(r Rows) error {
		l, err := scanLock(r)
		locks = append(locks, l)
		return err
	}, `SELECT `+lockColumns+` FROM locks l JOIN states s ON s.id = l.state_id WHERE s.name = $1 `+lockOrder, name)
	if more != nil {
		b.Items = append(b.Items, more.Items...)
	}
	if err := tx.Send(ctx, b); err != nil {
		return nil, err
	}
	if st == nil {
		if create {
			return nil, ErrRetry // deleted between our insert and our lock
		}
		return nil, notFound(name)
	}
	st.created = created == 1
	if locks != nil {
		st.Locks = locks
	}
	return st, nil
}

// State returns the state and its current holders. ErrNotFound when the
// state was never locked or written.
func (s *Store) State(ctx context.Context, name string) (*kilolock.State, error) {
	return readValue(ctx, s, "state", func(tx Tx) (*kilolock.State, error) {
		all, err := readStates(ctx, tx, name)
		if err == nil && len(all) == 0 {
			err = notFound(name)
		}
		if err != nil {
			return nil, err
		}
		return &all[0], nil
	})
}

// States lists every state with its holders, by name.
func (s *Store) States(ctx context.Context) ([]kilolock.State, error) {
	return readValue(ctx, s, "list states", func(tx Tx) ([]kilolock.State, error) { return readStates(ctx, tx, "") })
}

// readStates reads one state (name != "") or all of them, with their
// locks, in one batch.
func readStates(ctx context.Context, tx Tx, name string) ([]kilolock.State, error) {
	where := ""
	if name != "" {
		where = `WHERE s.name = $1`
	}
	b := &Batch{}
	all := []kilolock.State{}
	index := map[string]int{}
	b.Query(func(r Rows) error {
		st, err := scanState(r)
		if err != nil {
			return err
		}
		index[st.Name] = len(all)
		all = append(all, st.State)
		return nil
	}, `SELECT `+stateColumns+` FROM states s `+where+` ORDER BY s.name{C}`, args(name)...)
	b.Query(func(r Rows) error {
		var owner string
		l, err := scanLock(r, &owner)
		if i, ok := index[owner]; ok && err == nil {
			all[i].Locks = append(all[i].Locks, l)
		}
		return err
	}, `SELECT `+lockColumns+`, s.name FROM locks l JOIN states s ON s.id = l.state_id `+where+`
		ORDER BY s.name{C}, l.acquired_at, l.lock_id{C}`, args(name)...)
	if err := tx.Send(ctx, b); err != nil {
		return nil, err
	}
	return all, nil
}

// args is name as the one argument of a statement, or none.
func args(name string) []any {
	if name == "" {
		return nil
	}
	return []any{name}
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
	return s.write(ctx, "set lock mode", func(tx Tx) error {
		st, err := lockState(ctx, tx, name, true, mode, nil)
		if err != nil {
			return err
		}
		if err := storekit.CheckLockMode(&st.State); err != nil {
			return err
		}
		if st.created || st.LockMode == mode {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE states SET lock_mode = $2 WHERE id = $1`, st.id, string(mode))
		return err
	})
}

// SetSharedPlanLocks sets whether plans take shared read locks on a state
// (nil: the server's default), creating a missing state. Locks held keep
// what they are.
func (s *Store) SetSharedPlanLocks(ctx context.Context, name string, shared *bool) error {
	return s.write(ctx, "set shared plan locks", func(tx Tx) error {
		st, err := lockState(ctx, tx, name, true, kilolock.LockExclusive, nil)
		if err != nil {
			return err
		}
		var v any
		if shared != nil {
			v = *shared
		}
		_, err = tx.Exec(ctx, `UPDATE states SET shared_plan_locks = $2 WHERE id = $1`, st.id, v)
		return err
	})
}

// SetRequireClientEncryption sets whether a state takes only client-side
// encrypted writes, creating a missing state. Its versions stay as they
// are.
func (s *Store) SetRequireClientEncryption(ctx context.Context, name string, require bool) error {
	return s.write(ctx, "set require client encryption", func(tx Tx) error {
		st, err := lockState(ctx, tx, name, true, kilolock.LockExclusive, nil)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE states SET require_client_encryption = $2 WHERE id = $1`, st.id, require)
		return err
	})
}

// SetAllowLineageChange lets the next writes to a state carry another
// lineage. ErrNotFound when the state does not exist.
func (s *Store) SetAllowLineageChange(ctx context.Context, name string, allow bool) error {
	return s.write(ctx, "set allow lineage change", func(tx Tx) error {
		n, err := tx.Exec(ctx, `UPDATE states SET allow_lineage_change = $2 WHERE name = $1`, name, allow)
		if err == nil && n == 0 {
			return notFound(name)
		}
		return err
	})
}

// Delete removes a state with its versions, payloads and locks (the
// foreign keys cascade), when storekit.CheckDelete allows it under the
// state's row lock. ErrNotFound when it does not exist. Version ids are
// not reused.
func (s *Store) Delete(ctx context.Context, name string, opts kilolock.DeleteOptions) (versions int64, err error) {
	err = s.write(ctx, "delete state", func(tx Tx) error {
		st, err := lockState(ctx, tx, name, false, "", nil)
		if err != nil {
			return err
		}
		if err := storekit.CheckDelete(&st.State, opts); err != nil {
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
// with one statement, outside any transaction.
func (s *Store) CurrentVersion(ctx context.Context, name string) (id, number int64, err error) {
	err = s.d.Pool().QueryRow(ctx, `SELECT current_version_id, current_version FROM states WHERE name = $1`, name).Scan(&id, &number)
	if errors.Is(err, ErrNoRows) {
		return 0, 0, notFound(name)
	}
	if err != nil {
		return 0, 0, s.d.Translate("current version", err)
	}
	return id, number, nil
}

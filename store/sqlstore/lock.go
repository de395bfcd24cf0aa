package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/kilolock/kilolock"
)

// Lock takes a lock, creating the state in opts.Mode (exclusive when "")
// when it does not exist; an existing state keeps its mode. A held
// exclusive lock, a lock id already held on the state, or an optimistic
// state with opts.MaxHolders holders gives a *kilolock.LockedError naming
// the (first) holder: kilolock.CheckLock decides, under the state's row
// lock. An empty lock id is ErrInvalid.
func (s *Store) Lock(ctx context.Context, name string, info kilolock.LockInfo, opts kilolock.LockOptions) (*kilolock.Lock, error) {
	mode := opts.Mode
	if mode == "" {
		mode = kilolock.LockExclusive
	}
	if err := kilolock.ValidLockMode(mode); err != nil {
		return nil, err
	}
	if info.ID == "" {
		return nil, &kilolock.InvalidError{Code: "missing_lock_id", Message: "the lock info has no ID", Hint: "send the lock document Terraform or OpenTofu sends, with its ID"}
	}
	doc, err := json.Marshal(info)
	if err != nil {
		return nil, &kilolock.InvalidError{Code: "invalid_lock_info", Message: err.Error()}
	}
	var lock *kilolock.Lock
	err = s.write(ctx, "lock", func(tx Tx) error {
		st, err := lockState(ctx, tx, name, true, mode, nil)
		if err != nil {
			return err
		}
		if err := kilolock.CheckLock(&st.StateInfo, info, opts); err != nil {
			return err
		}
		l := kilolock.Lock{Info: info, BaseVersion: st.Current, BaseSerial: st.Serial}
		err = tx.QueryRow(ctx, `INSERT INTO locks (state_id, lock_id, info, who, operation, base_version, base_serial, acquired_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, {now}) RETURNING acquired_at`,
			st.id, info.ID, string(doc), info.Who, info.Operation, st.Current, int64(st.Serial)).Scan(&l.Acquired)
		lock = &l
		return err
	})
	if err != nil {
		return nil, err
	}
	return lock, nil
}

// Unlock releases the lock with the given id and returns it. With force,
// an empty id releases every holder (none is not an error). A lock id that
// is not held, or an empty id without force, gives a
// *kilolock.LockMismatchError naming the first holder (zero when none); a
// state that does not exist gives ErrNotFound.
func (s *Store) Unlock(ctx context.Context, name, id string, force bool) ([]kilolock.Lock, error) {
	var released []kilolock.Lock
	err := s.write(ctx, "unlock", func(tx Tx) error {
		st, err := lockState(ctx, tx, name, false, "", nil)
		if err != nil {
			return err
		}
		if force && id == "" {
			_, err := tx.Exec(ctx, `DELETE FROM locks WHERE state_id = $1`, st.id)
			released = st.Locks
			return err
		}
		for _, l := range st.Locks {
			if l.Info.ID == id {
				_, err := tx.Exec(ctx, `DELETE FROM locks WHERE state_id = $1 AND lock_id = $2`, st.id, id)
				released = []kilolock.Lock{l}
				return err
			}
		}
		e := &kilolock.LockMismatchError{State: name, Given: id}
		if len(st.Locks) > 0 {
			e.Holder = st.Locks[0].Info
		}
		return e
	})
	if err != nil {
		return nil, err
	}
	return released, nil
}

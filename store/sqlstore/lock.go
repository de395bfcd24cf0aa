package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/storekit"
)

// Lock takes a lock, creating the state in opts.Mode (exclusive when "")
// when it does not exist, unless opts.NoCreate: then a lock CheckLock
// allows on a state with no holders is answered Transient and nothing is
// stored (an apply run's, ErrNotFound). An existing state keeps its mode. A held
// exclusive lock, a lock id already held on the state, or an optimistic
// state with opts.MaxHolders holders gives a *kilolock.LockedError naming
// the (first) holder: storekit.CheckLock decides, under the state's row
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
	return valueOf(ctx, s.writeLock, "lock", func(tx Tx) (*kilolock.Lock, error) {
		now := s.leaseNow()
		var runs []kilolock.ApplyRun
		b := &Batch{}
		queueRunRows(b, &runs, inFlight+` OR (s.name = $1 AND a.id = $3)`, `ORDER BY a.created_at, a.id{C}`, name, now, opts.Run)
		st, err := lockState(ctx, tx, name, !opts.NoCreate, mode, b)
		if opts.NoCreate && opts.Run == "" && errors.Is(err, kilolock.ErrNotFound) {
			return transientLock(name, mode, info, opts, now)
		}
		if err != nil {
			return nil, err
		}
		if err := storekit.CheckLock(&st.State, info, opts); err != nil {
			return nil, err
		}
		shared := storekit.IsReadLock(&st.State, info, opts)
		if err := storekit.CheckRunLock(&st.State, info, opts, shared, runs, now); err != nil {
			return nil, err
		}
		l := kilolock.Lock{Info: info, BaseVersion: st.Current, BaseSerial: st.Serial, Shared: shared, Run: opts.Run}
		err = tx.QueryRow(ctx, `INSERT INTO locks (state_id, lock_id, info, who, operation, base_version, base_serial, acquired_at, shared, run_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, {now}, $8, $9) RETURNING acquired_at`,
			st.id, info.ID, string(doc), info.Who, info.Operation, st.Current, int64(st.Serial), shared, opts.Run).Scan(&l.Acquired)
		if err == nil && opts.Seen != nil {
			*opts.Seen = st.State
			opts.Seen.Locks = append(slices.Clip(st.Locks), l)
		}
		return &l, err
	})
}

// transientLock is the lock of a caller that may not create the state
// name, which does not exist: decided as on a new state with no holders,
// and kept nowhere.
func transientLock(name string, mode kilolock.LockMode, info kilolock.LockInfo, opts kilolock.LockOptions, now time.Time) (*kilolock.Lock, error) {
	st := &kilolock.State{Name: name, LockMode: mode}
	if err := storekit.CheckLock(st, info, opts); err != nil {
		return nil, err
	}
	return &kilolock.Lock{Info: info, Shared: storekit.IsReadLock(st, info, opts), Transient: true, Acquired: now}, nil
}

// Unlock releases what storekit.SelectUnlock selects under the state's
// row lock and returns it: the lock with the given id, or with Force and
// an empty id every write lock (plans' read locks stay). A lock id that is
// not held gives a *kilolock.LockMismatchError naming the writer (zero
// when none); a read-only caller's release of a write lock, a
// *kilolock.ReadOnlyLockError; a state that does not exist, ErrNotFound.
func (s *Store) Unlock(ctx context.Context, name, id string, opts kilolock.UnlockOptions) ([]kilolock.Lock, error) {
	return valueOf(ctx, s.writeLock, "unlock", func(tx Tx) ([]kilolock.Lock, error) {
		st, err := lockState(ctx, tx, name, false, "", nil)
		if err != nil {
			return nil, err
		}
		released, err := storekit.SelectUnlock(&st.State, id, opts)
		if err != nil || len(released) == 0 {
			return released, err
		}
		ids := make([]string, len(released))
		for i, l := range released {
			ids[i] = l.Info.ID
		}
		_, err = tx.Exec(ctx, `DELETE FROM locks WHERE state_id = $1 AND lock_id IN (SELECT k FROM {texts $2} AS u)`, st.id, ids)
		return released, err
	})
}

// EndPlanLocks deletes the plans' locks (no apply run's) acquired before
// acquiredBefore, on every state, in one statement, and returns them. It
// takes no state's row lock: a plan's lock is never what a writer's check
// waits on, and a holder that releases its lock meanwhile deletes the same
// row, which one of the two statements finds gone.
func (s *Store) EndPlanLocks(ctx context.Context, acquiredBefore time.Time) ([]kilolock.StateLock, error) {
	return writeValue(ctx, s, "end plan locks", func(tx Tx) ([]kilolock.StateLock, error) {
		ended := []kilolock.StateLock{}
		rows, err := tx.Query(ctx, `DELETE FROM locks WHERE operation = $1 AND run_id = '' AND acquired_at < $2
			RETURNING info, base_version, base_serial, acquired_at, shared, run_id, (SELECT s.name FROM states s WHERE s.id = locks.state_id)`,
			kilolock.OperationPlan, acquiredBefore.UTC())
		err = EachRow(rows, err, func(r Rows) error {
			var sl kilolock.StateLock
			l, err := scanLock(r, &sl.State)
			sl.Lock = l
			ended = append(ended, sl)
			return err
		})
		return ended, err
	})
}

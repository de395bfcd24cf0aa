package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/kilolock/kilolock"
)

// RecordRejection keeps a refused commit of the state called name. It sets
// r.ID, r.State and r.Created (UTC, microseconds). A nil r, or a serial
// above math.MaxInt64, is ErrInvalid; ErrNotFound when the state does not
// exist.
func (s *Store) RecordRejection(ctx context.Context, name string, r *kilolock.Rejection) error {
	addresses, err := kilolock.EncodeRejection(r)
	if err != nil {
		return err
	}
	var winnerActor, winnerLockID, winnerVersion any
	if w := r.Winner; w != nil {
		winnerActor, winnerLockID, winnerVersion = w.Actor, w.LockID, w.Version
	}
	var (
		id      int64
		created time.Time
	)
	err = s.update(ctx, "record rejection", func(tx *sql.Tx) error {
		stateID, err := lookupState(ctx, tx, name)
		if err != nil {
			return err
		}
		// Taken under the write lock, so that created_at follows id.
		created = now()
		res, err := tx.ExecContext(ctx, `INSERT INTO rejected_commits
(state_id, created_at, lock_id, actor, reason, addresses, latest_serial, base_serial,
 winner_actor, winner_lock_id, winner_version, hint)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			stateID, formatTime(created), r.LockID, r.Actor, r.Reason, addresses,
			int64(r.LatestSerial), int64(r.BaseSerial), winnerActor, winnerLockID, winnerVersion, r.Hint)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return err
	}
	r.ID, r.State, r.Created = id, name, created
	return nil
}

// sqlRejections reads a state's newest rejections backwards along the
// (state_id, id) index.
const sqlRejections = `SELECT id, created_at, lock_id, actor, reason, addresses, latest_serial, base_serial,
	winner_actor, winner_lock_id, winner_version, hint
FROM rejected_commits WHERE state_id = ?1 ORDER BY id DESC LIMIT ?2`

// Rejections lists the refused commits of the state called name, newest
// first: at most limit (50 when 0 or less). Winner is nil when none was
// recorded; Addresses is never nil. ErrNotFound when the state does not
// exist; an empty list when nothing was refused.
func (s *Store) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	if limit <= 0 {
		limit = 50
	}
	out := []kilolock.Rejection{}
	err := s.view(ctx, "rejections", func(tx *sql.Tx) error {
		stateID, err := lookupState(ctx, tx, name)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, sqlRejections, stateID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				r                         kilolock.Rejection
				created, addresses        string
				latest, base              int64
				winnerActor, winnerLockID sql.NullString
				winnerVersion             sql.NullInt64
			)
			if err := rows.Scan(&r.ID, &created, &r.LockID, &r.Actor, &r.Reason, &addresses, &latest, &base,
				&winnerActor, &winnerLockID, &winnerVersion, &r.Hint); err != nil {
				return err
			}
			if r.Created, err = parseTime(created); err != nil {
				return err
			}
			if r.Addresses, err = kilolock.DecodeAddresses(addresses); err != nil {
				return fmt.Errorf("rejection %d: %w", r.ID, err)
			}
			r.State, r.LatestSerial, r.BaseSerial = name, uint64(latest), uint64(base)
			if winnerVersion.Valid {
				r.Winner = &kilolock.Winner{Actor: winnerActor.String, LockID: winnerLockID.String, Version: winnerVersion.Int64}
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

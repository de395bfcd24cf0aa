package sqlstore

import (
	"context"
	"errors"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/storekit"
)

// RecordRejection keeps a refused commit of the state called name. It sets
// r.ID, r.State and r.Created (UTC, microseconds; taken in the statement,
// so that created_at follows id). A nil r, or a serial above
// math.MaxInt64, is ErrInvalid; ErrNotFound when the state does not exist
// (or is deleted meanwhile).
func (s *Store) RecordRejection(ctx context.Context, name string, r *kilolock.Rejection) error {
	addresses, err := storekit.EncodeRejection(r)
	if err != nil {
		return err
	}
	var winnerActor, winnerLockID, winnerVersion any
	if w := r.Winner; w != nil {
		winnerActor, winnerLockID, winnerVersion = w.Actor, w.LockID, w.Version
	}
	var rec kilolock.Rejection
	err = s.write(ctx, "record rejection", func(tx Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO rejected_commits (state_id, created_at, lock_id, actor, reason, addresses,
				latest_serial, base_serial, winner_actor, winner_lock_id, winner_version, hint)
			SELECT s.id, {now}, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM states s WHERE s.name = $1
			RETURNING id, created_at`,
			name, r.LockID, r.Actor, r.Reason, addresses, int64(r.LatestSerial), int64(r.BaseSerial),
			winnerActor, winnerLockID, winnerVersion, r.Hint).Scan(&rec.ID, &rec.Created)
		if errors.Is(err, ErrNoRows) {
			return notFound(name)
		}
		return err
	})
	if err != nil {
		return err
	}
	r.ID, r.State, r.Created = rec.ID, name, rec.Created
	return nil
}

// SQLRejections reads a state's newest rejections backwards along the
// (state_id, id) index.
const SQLRejections = `SELECT id, created_at, lock_id, actor, reason, addresses, latest_serial, base_serial,
		winner_actor, winner_lock_id, winner_version, hint
	FROM rejected_commits WHERE state_id = ` + sqlStateID + ` ORDER BY id DESC LIMIT $2`

// Rejections lists the refused commits of the state called name, newest
// first: at most limit (50 when 0 or less). Winner is nil when none was
// recorded; Addresses is never nil. ErrNotFound when the state does not
// exist; an empty list when nothing was refused.
func (s *Store) Rejections(ctx context.Context, name string, limit int) ([]kilolock.Rejection, error) {
	if limit <= 0 {
		limit = 50
	}
	return ofState(ctx, s, "rejections", name, func(rows Rows, r *kilolock.Rejection) (bool, error) {
		var (
			addresses                 string
			latest, base              int64
			winnerActor, winnerLockID *string
			winnerVersion             *int64
		)
		if err := rows.Scan(&r.ID, &r.Created, &r.LockID, &r.Actor, &r.Reason, &addresses, &latest, &base,
			&winnerActor, &winnerLockID, &winnerVersion, &r.Hint); err != nil {
			return false, err
		}
		var err error
		if r.Addresses, err = storekit.DecodeAddresses(addresses); err != nil {
			return false, corrupt("rejection %d: %v", r.ID, err)
		}
		r.State, r.LatestSerial, r.BaseSerial = name, uint64(latest), uint64(base)
		if winnerVersion != nil {
			r.Winner = &kilolock.Winner{Version: *winnerVersion}
			if winnerActor != nil {
				r.Winner.Actor = *winnerActor
			}
			if winnerLockID != nil {
				r.Winner.LockID = *winnerLockID
			}
		}
		return true, nil
	}, SQLRejections, name, limit)
}

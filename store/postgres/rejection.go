package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kilolock/kilolock"
)

// RecordRejection keeps a refused commit of the state called name. It sets
// r.ID, r.State and r.Created (UTC, microseconds). A nil r, or a serial
// above math.MaxInt64, is ErrInvalid; ErrNotFound when the state does not
// exist (or is deleted meanwhile).
func (s *Store) RecordRejection(ctx context.Context, name string, r *kilolock.Rejection) error {
	addresses, err := kilolock.EncodeRejection(r)
	if err != nil {
		return err
	}
	var winnerActor, winnerLockID *string
	var winnerVersion *int64
	if w := r.Winner; w != nil {
		winnerActor, winnerLockID, winnerVersion = &w.Actor, &w.LockID, &w.Version
	}
	var (
		id      int64
		created time.Time
	)
	err = s.inTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO rejected_commits (state_id, created_at, lock_id, actor, reason, addresses,
				latest_serial, base_serial, winner_actor, winner_lock_id, winner_version, hint)
			SELECT s.id, clock_timestamp(), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM states s WHERE s.name = $1
			RETURNING id, created_at`,
			name, r.LockID, r.Actor, r.Reason, addresses, int64(r.LatestSerial), int64(r.BaseSerial),
			winnerActor, winnerLockID, winnerVersion, r.Hint).Scan(&id, &created)
		var pe *pgconn.PgError
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return notFound(name)
		case errors.As(err, &pe) && pe.Code == "23503": // foreign_key_violation: deleted since we read it
			return notFound(name)
		}
		return err
	})
	if err != nil {
		return err
	}
	r.ID, r.State, r.Created = id, name, created.UTC()
	return nil
}

// sqlRejections reads a state's newest rejections backwards along the
// (state_id, id) index.
const sqlRejections = `SELECT id, created_at, lock_id, actor, reason, addresses, latest_serial, base_serial,
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
	out := []kilolock.Rejection{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM states WHERE name = $1)`, name)
		b.Queue(sqlRejections, name, limit)
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
			var (
				r                         kilolock.Rejection
				addresses                 string
				latest, base              int64
				winnerActor, winnerLockID *string
				winnerVersion             *int64
			)
			if err := rows.Scan(&r.ID, &r.Created, &r.LockID, &r.Actor, &r.Reason, &addresses, &latest, &base,
				&winnerActor, &winnerLockID, &winnerVersion, &r.Hint); err != nil {
				return err
			}
			var err error
			if r.Addresses, err = kilolock.DecodeAddresses(addresses); err != nil {
				return corrupt("rejection %d: %v", r.ID, err)
			}
			r.State, r.Created, r.LatestSerial, r.BaseSerial = name, r.Created.UTC(), uint64(latest), uint64(base)
			if winnerVersion != nil {
				r.Winner = &kilolock.Winner{Version: *winnerVersion}
				if winnerActor != nil {
					r.Winner.Actor = *winnerActor
				}
				if winnerLockID != nil {
					r.Winner.LockID = *winnerLockID
				}
			}
			out = append(out, r)
			return nil
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

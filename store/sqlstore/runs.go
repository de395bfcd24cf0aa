package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
	"github.com/kilolock/kilolock/store/storekit"
)

var _ kilolock.RunStore = (*Store)(nil)

const runColumns = `a.id, s.name, a.actor, a.info, a.status, a.source_serial, a.lease_ms,
	a.created_at, a.acquired_at, a.renewed_at, a.expires_at, a.ended_at, a.ended_by, a.reason`

const runFrom = `FROM apply_runs a JOIN states s ON s.id = a.state_id`

func scanRun(r Row, extra ...any) (*kilolock.ApplyRun, error) {
	var (
		run             kilolock.ApplyRun
		status          string
		serial, leaseMS int64
		acquired, ended time.Time
	)
	dest := []any{&run.ID, &run.State, &run.Actor, &run.Info, &status, &serial, &leaseMS,
		&run.Created, &acquired, &run.Renewed, &run.Expires, &ended, &run.EndedBy, &run.Reason}
	if err := r.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	run.Status = kilolock.RunStatus(status)
	run.SourceSerial = uint64(serial)
	run.Lease = time.Duration(leaseMS) * time.Millisecond
	run.Acquired, run.Ended = acquired, ended
	run.Reservations = []kilolock.Reservation{}
	return &run, nil
}

// statusAt sets each run's Status as of now (expired past its lease).
func statusAt(runs []kilolock.ApplyRun, now time.Time) {
	for i := range runs {
		runs[i].Status = runs[i].StatusAt(now)
	}
}

// queueRuns queues the read of runs matching where (over apply_runs a and
// states s) with their reservations, into *out in the order of order.
func queueRuns(b *Batch, out *[]kilolock.ApplyRun, where, order string, args ...any) {
	index := queueRunRows(b, out, where, order, args...)
	queueReservations(b, out, index, where, order, args...)
}

// queueRunRows queues the read of the runs alone, without reservations; it
// returns the index of each run's position, filled as the rows are read.
func queueRunRows(b *Batch, out *[]kilolock.ApplyRun, where, order string, args ...any) map[string]int {
	index := map[string]int{}
	b.Query(func(r Rows) error {
		run, err := scanRun(r)
		if err != nil {
			return err
		}
		index[run.ID] = len(*out)
		*out = append(*out, *run)
		return nil
	}, `SELECT `+runColumns+` `+runFrom+` WHERE `+where+` `+order, args...)
	return index
}

func queueReservations(b *Batch, out *[]kilolock.ApplyRun, index map[string]int, where, order string, args ...any) {
	b.Query(func(r Rows) error {
		var id, pattern, mode string
		if err := r.Scan(&id, &pattern, &mode); err != nil {
			return err
		}
		i, ok := index[id]
		if !ok {
			return nil
		}
		p, err := reserve.Parse(pattern)
		if err != nil {
			return corrupt("stored reservation %q of run %s: %v", pattern, id, err)
		}
		(*out)[i].Reservations = append((*out)[i].Reservations, kilolock.Reservation{Pattern: p, Mode: reserve.Mode(mode)})
		return nil
	}, `SELECT r.run_id, r.pattern, r.mode FROM run_reservations r WHERE r.run_id IN (SELECT a.id `+runFrom+` WHERE `+where+` `+order+`)
		ORDER BY r.run_id, r.pattern{C}`, args...)
}

// inFlight is the condition of runs waiting or active whose lease holds
// at $2, of the state named $1.
const inFlight = `s.name = $1 AND a.status IN ('waiting', 'active') AND a.expires_at > $2`

// CreateRun stores run as waiting, creating its state when missing.
// ErrConflict when its id is taken.
func (s *Store) CreateRun(ctx context.Context, run *kilolock.ApplyRun, now time.Time) error {
	run.Status, run.Created, run.Renewed, run.Expires = kilolock.RunWaiting, now, now, now.Add(run.Lease)
	return s.write(ctx, "create apply run", func(tx Tx) error {
		st, err := lockState(ctx, tx, run.State, true, kilolock.LockExclusive, nil)
		if err != nil {
			return err
		}
		b := &Batch{}
		b.Exec(nil, `INSERT INTO apply_runs (id, state_id, actor, info, status, source_serial, lease_ms, created_at, renewed_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9)`,
			run.ID, st.id, run.Actor, run.Info, string(run.Status), int64(run.SourceSerial), run.Lease.Milliseconds(), now, run.Expires)
		rows := make([][]any, len(run.Reservations))
		for i, r := range run.Reservations {
			rows[i] = []any{run.ID, st.id, r.Pattern.String(), string(r.Mode), false}
		}
		if len(rows) > 0 {
			b.Insert(func(int64) error { return nil }, "run_reservations", []string{"run_id", "state_id", "pattern", "mode", "held"}, rows)
		}
		return tx.Send(ctx, b)
	})
}

// lockRun locks the state of run id and reads the run and the state's
// runs in flight at now (the run among them if it is). ErrNotFound when
// there is no such run.
func lockRun(ctx context.Context, tx Tx, id string, now time.Time) (*stateRow, *kilolock.ApplyRun, []kilolock.ApplyRun, error) {
	var name string
	if err := tx.QueryRow(ctx, `SELECT s.name `+runFrom+` WHERE a.id = $1`, id).Scan(&name); errors.Is(err, ErrNoRows) {
		return nil, nil, nil, missing("apply run", id)
	} else if err != nil {
		return nil, nil, nil, err
	}
	var runs, own []kilolock.ApplyRun
	b := &Batch{}
	queueRuns(b, &runs, inFlight, `ORDER BY a.created_at, a.id{C}`, name, now)
	queueRuns(b, &own, `a.id = $1`, ``, id)
	st, err := lockState(ctx, tx, name, false, "", b)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(own) == 0 {
		return nil, nil, nil, missing("apply run", id)
	}
	statusAt(runs, now)
	statusAt(own, now)
	return st, &own[0], runs, nil
}

// liveRun runs fn in a write transaction on run id, locked with its
// state by lockRun, when the run has not ended (else a
// *kilolock.RunEndedError), and returns the run as fn left it.
func (s *Store) liveRun(ctx context.Context, op, id string, now time.Time, fn func(tx Tx, st *stateRow, run *kilolock.ApplyRun, runs []kilolock.ApplyRun) error) (*kilolock.ApplyRun, error) {
	var out *kilolock.ApplyRun
	err := s.write(ctx, op, func(tx Tx) error {
		out = nil
		st, run, runs, err := lockRun(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if run.Status.Ended() {
			return &kilolock.RunEndedError{Run: run}
		}
		out = run
		return fn(tx, st, run, runs)
	})
	return out, err
}

// AcquireRun takes all of a waiting run's reservations, or none and the
// blockers (storekit.RunBlockers decides, under the state's row lock).
func (s *Store) AcquireRun(ctx context.Context, id string, now time.Time) (*kilolock.ApplyRun, []reserve.Blocker, error) {
	var blockers []reserve.Blocker
	out, err := s.liveRun(ctx, "acquire apply run", id, now, func(tx Tx, st *stateRow, run *kilolock.ApplyRun, runs []kilolock.ApplyRun) error {
		blockers = nil
		if run.Status != kilolock.RunActive {
			blockers = storekit.RunBlockers(&st.State, run, runs, now)
		}
		if run.Status == kilolock.RunActive || len(blockers) > 0 {
			return renewLease(ctx, tx, run, now)
		}
		// now was read before this transaction waited for the state's
		// row: a run that ended meanwhile, perhaps the blocker whose end
		// let this one through, may have ended after it. The run takes
		// its reservations no earlier than the state's last run ended.
		var last time.Time
		if err := tx.QueryRow(ctx, `SELECT ended_at FROM apply_runs WHERE state_id = $1 AND ended_at IS NOT NULL
			ORDER BY ended_at DESC LIMIT 1`, st.id).Scan(&last); err != nil && !errors.Is(err, ErrNoRows) {
			return err
		}
		if last.After(now) {
			now = last.UTC()
		}
		run.Renewed, run.Expires = now, now.Add(run.Lease)
		run.Status, run.Acquired = kilolock.RunActive, now
		b := &Batch{}
		b.Exec(nil, `UPDATE apply_runs SET status = 'active', acquired_at = $2, renewed_at = $2, expires_at = $3 WHERE id = $1`, id, now, run.Expires)
		b.Exec(nil, `UPDATE run_reservations SET held = true WHERE run_id = $1`, id)
		return tx.Send(ctx, b)
	})
	if err != nil {
		return nil, nil, err
	}
	return out, blockers, nil
}

// RenewRun extends a waiting or active run's lease.
func (s *Store) RenewRun(ctx context.Context, id string, now time.Time) (*kilolock.ApplyRun, error) {
	return s.liveRun(ctx, "renew apply run", id, now, func(tx Tx, _ *stateRow, run *kilolock.ApplyRun, _ []kilolock.ApplyRun) error {
		return renewLease(ctx, tx, run, now)
	})
}

// renewLease extends run's lease from now, in the row and in run.
func renewLease(ctx context.Context, tx Tx, run *kilolock.ApplyRun, now time.Time) error {
	run.Renewed, run.Expires = now, now.Add(run.Lease)
	_, err := tx.Exec(ctx, `UPDATE apply_runs SET renewed_at = $2, expires_at = $3 WHERE id = $1`, run.ID, now, run.Expires)
	return err
}

// EndRun ends a waiting or active run, releasing its reservations and,
// unless it is aborted, the locks its CLI still holds. An aborted run's
// CLI may still be running: its lock stays, so that its last write is
// refused as the write of an aborted run (apply_run_ended, with a hint
// that says so) and its unlock finds the lock; a lock of a run blocks no
// one (see storekit.CheckLock).
func (s *Store) EndRun(ctx context.Context, id string, end kilolock.RunEnd, now time.Time) (*kilolock.ApplyRun, error) {
	return s.liveRun(ctx, "end apply run", id, now, func(tx Tx, st *stateRow, run *kilolock.ApplyRun, _ []kilolock.ApplyRun) error {
		run.Status, run.Ended, run.EndedBy, run.Reason = end.Status, now, end.By, end.Reason
		b := &Batch{}
		b.Exec(nil, `UPDATE apply_runs SET status = $2, ended_at = $3, ended_by = $4, reason = $5 WHERE id = $1`,
			id, string(end.Status), now, end.By, end.Reason)
		b.Exec(nil, `UPDATE run_reservations SET held = false WHERE run_id = $1`, id)
		if end.Status != kilolock.RunAborted {
			b.Exec(nil, `DELETE FROM locks WHERE state_id = $1 AND run_id = $2`, st.id, id)
		}
		return tx.Send(ctx, b)
	})
}

// Run returns one run with its reservations.
func (s *Store) Run(ctx context.Context, id string, now time.Time) (*kilolock.ApplyRun, error) {
	var runs []kilolock.ApplyRun
	err := s.read(ctx, "apply run", func(tx Tx) error {
		runs = nil
		b := &Batch{}
		queueRuns(b, &runs, `a.id = $1`, ``, id)
		return tx.Send(ctx, b)
	})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, missing("apply run", id)
	}
	statusAt(runs, now)
	return &runs[0], nil
}

// Runs lists runs newest first with their reservations.
func (s *Store) Runs(ctx context.Context, f kilolock.RunFilter, now time.Time) ([]kilolock.ApplyRun, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	where, args := `true`, []any{}
	switch {
	case f.State != "" && f.InFlight:
		where, args = inFlight, []any{f.State, now}
	case f.State != "":
		where, args = `s.name = $1`, []any{f.State}
	case f.InFlight:
		where, args = `a.status IN ('waiting', 'active') AND a.expires_at > $1`, []any{now}
	}
	order := fmt.Sprintf(`ORDER BY a.created_at DESC, a.id{C} DESC LIMIT %d`, limit)
	out := []kilolock.ApplyRun{}
	err := s.read(ctx, "apply runs", func(tx Tx) error {
		out = out[:0]
		b := &Batch{}
		var exists = true
		if f.State != "" {
			b.Query(func(r Rows) error { return r.Scan(&exists) }, sqlStateExists, f.State)
		}
		queueRuns(b, &out, where, order, args...)
		if err := tx.Send(ctx, b); err != nil {
			return err
		}
		if !exists {
			return notFound(f.State)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	statusAt(out, now)
	return out, nil
}

// sqlCoveringHolds reads the held reservations, of runs active at $2, of
// the state named $1 whose pattern is one of the spellings $3.
const sqlCoveringHolds = `SELECT r.run_id, r.pattern, r.mode, a.actor, a.expires_at
	FROM run_reservations r JOIN apply_runs a ON a.id = r.run_id
	WHERE r.state_id = ` + sqlStateID + ` AND r.held AND a.status = 'active' AND a.expires_at > $2
	AND r.pattern IN (SELECT k FROM {texts $3} AS u)`

// coveringHolds reads the holds of active runs covering keys.
func coveringHolds(ctx context.Context, tx Tx, name string, keys []string, now time.Time) ([]reserve.Hold, error) {
	spellings, _ := storekit.CoveringSpellings(keys)
	var out []reserve.Hold
	rows, err := tx.Query(ctx, sqlCoveringHolds, name, now, spellings)
	err = EachRow(rows, err, func(r Rows) error {
		var (
			h             reserve.Hold
			pattern, mode string
		)
		if err := r.Scan(&h.Run, &pattern, &mode, &h.Holder, &h.Expires); err != nil {
			return err
		}
		p, err := reserve.Parse(pattern)
		if err != nil {
			return corrupt("stored reservation %q of run %s: %v", pattern, h.Run, err)
		}
		h.Pattern, h.Mode = p, reserve.Mode(mode)
		out = append(out, h)
		return nil
	})
	return out, err
}

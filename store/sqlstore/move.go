package sqlstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/store/storekit"
)

var _ history.MoveStore = (*Store)(nil)

// Move writes a move between two states in one transaction (see
// history.MoveStore): both state rows locked in the order of their ids,
// then each side's commit run as Commit runs it (its checks, its
// reservations, the target's quota), then the move's record. Rows written
// are the two commits' (O(moved): the source closes the moved intervals,
// the target opens them and stores their payloads) and one of the move;
// a split adds the new state's row and its copied quota, a merge the
// source's archived mark.
func (s *Store) Move(ctx context.Context, m *history.MoveCommit) (*kilolock.Version, *kilolock.Version, kilolock.WriteStats, error) {
	if m == nil || m.FromCommit == nil || m.ToCommit == nil || m.From == "" || m.To == "" || m.From == m.To {
		return nil, nil, kilolock.WriteStats{}, &kilolock.InvalidError{Code: "invalid_move", Message: "a move needs two different states and a commit for each"}
	}
	type side struct {
		name string
		c    *kilolock.Commit
		p    *storekit.PreparedCommit
		sc   *sealedCommit
		v    *kilolock.Version
	}
	sides := []*side{{name: m.From, c: m.FromCommit}, {name: m.To, c: m.ToCommit}}
	for _, sd := range sides {
		var err error
		if sd.p, err = storekit.PrepareCommit(sd.c); err != nil {
			return nil, nil, kilolock.WriteStats{}, err
		}
		if sd.sc, err = s.prepareSeal(sd.c, sd.p); err != nil {
			return nil, nil, kilolock.WriteStats{}, err
		}
	}
	var stats kilolock.WriteStats
	err := s.write(ctx, "move", func(tx Tx) error {
		stats = kilolock.WriteStats{}
		now := s.leaseNow()
		ids, err := s.lockMove(ctx, tx, m, &stats)
		if err != nil {
			return err
		}
		for _, sd := range sides {
			sd.v, err = s.apply(ctx, tx, sd.name, sd.c, sd.p, sd.sc, &stats, now)
			if err != nil {
				return history.MoveRefusal(sd.name, err)
			}
		}
		b := &Batch{}
		if m.ArchiveFrom {
			b.Exec(func(n int64) error { stats.Rows += int(n); stats.Bytes += int(n) * (len(m.From) + 8); return nil },
				`INSERT INTO state_holds (name, lifecycle) VALUES ($1, 'archived')
				ON CONFLICT (name) DO UPDATE SET lifecycle = excluded.lifecycle`, m.From)
		}
		row := []any{ids[m.From], sides[0].v.Number, ids[m.To], sides[1].v.Number, int64(len(m.Moved)), m.FromCommit.Version.Actor}
		b.Exec(counter(&stats, 1, rowBytes(row)+intBytes), `INSERT INTO state_moves (from_state_id, from_version, to_state_id, to_version, instances, actor, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, {now})`, row...)
		return tx.Send(ctx, b)
	})
	if err != nil {
		return nil, nil, kilolock.WriteStats{}, err
	}
	return sides[0].v, sides[1].v, stats, nil
}

// lockMove settles both states of m before either commit runs: it makes
// the target of a split (in the source's lock mode, with a copy of the
// source's own quota), locks both rows in the order of their ids, and
// refuses (a *history.MoveError) an archived side, a write lock held
// other than an apply run's (whose reservations the commits check), and a
// client-side encrypted side. It returns the states' ids by name.
func (s *Store) lockMove(ctx context.Context, tx Tx, m *history.MoveCommit, stats *kilolock.WriteStats) (map[string]int64, error) {
	ids := map[string]int64{}
	b := &Batch{}
	b.Query(func(r Rows) error {
		var (
			id   int64
			name string
		)
		err := r.Scan(&id, &name)
		ids[name] = id
		return err
	}, `SELECT id, name FROM states WHERE name = $1 OR name = $2`, m.From, m.To)
	held := map[string]string{}
	b.Query(func(r Rows) error {
		var name, l string
		err := r.Scan(&name, &l)
		held[name] = l
		return err
	}, `SELECT name, lifecycle FROM state_holds WHERE name = $1 OR name = $2`, m.From, m.To)
	if err := tx.Send(ctx, b); err != nil {
		return nil, err
	}
	if _, ok := ids[m.From]; !ok {
		return nil, notFound(m.From)
	}
	_, toExists := ids[m.To]
	switch {
	case m.Create && toExists:
		return nil, &history.MoveError{Code: history.MoveStateExists, State: m.To, Message: fmt.Sprintf("state %q exists already; a split makes a new state", m.To),
			Hint: "pick a new name, or move into the existing state with `kl state mv --to-state`"}
	case !m.Create && !toExists:
		return nil, notFound(m.To)
	}
	if held[m.From] == "archived" {
		return nil, &history.MoveError{Code: history.MoveSourceArchived, State: m.From, Forbidden: true,
			Message: fmt.Sprintf("state %q is archived: nothing moves out of it", m.From), Hint: "restore it first (kl state restore), or move from another state"}
	}
	if held[m.To] == "archived" {
		return nil, &history.MoveError{Code: history.MoveSourceArchived, State: m.To, Forbidden: true,
			Message: fmt.Sprintf("state %q is archived: nothing moves into it", m.To), Hint: "restore it first (kl state restore), or move into another state"}
	}
	if m.Create {
		// The new row is this transaction's alone until it commits: no
		// one else can wait on it, so it needs no place in the order.
		// A concurrent creator of the same name wins the unique index:
		// this move then finds the state there, as a later one would.
		n, err := tx.Exec(ctx, `INSERT INTO states (name, lock_mode, shared_plan_locks, created_at)
			SELECT $1, lock_mode, shared_plan_locks, {now} FROM states WHERE id = $2 ON CONFLICT (name) DO NOTHING`, m.To, ids[m.From])
		if err != nil {
			return nil, err
		}
		if n != 1 {
			return nil, &history.MoveError{Code: history.MoveStateExists, State: m.To, Message: fmt.Sprintf("state %q exists already; a split makes a new state", m.To),
				Hint: "pick a new name, or move into the existing state with `kl state mv --to-state`"}
		}
		stats.Rows++
		stats.Bytes += len(m.To) + len(kilolock.LockExclusive) + 2*intBytes
		// A limit set on the new name before it existed stays.
		n, err = tx.Exec(ctx, `INSERT INTO quotas (scope, target, soft, hard, unlimited, updated_at)
			SELECT scope, $2, soft, hard, unlimited, {now} FROM quotas WHERE scope = 'state' AND target = $1
			ON CONFLICT (scope, target) DO NOTHING`, m.From, m.To)
		if err != nil {
			return nil, err
		}
		stats.Rows += int(n)
		stats.Bytes += int(n) * (len("state") + len(m.To) + 4*intBytes)
	}
	names := []string{m.From, m.To}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case m.Create && a == m.To:
			return 1
		case m.Create && b == m.To:
			return -1
		}
		return int(ids[a] - ids[b])
	})
	for _, name := range names {
		st, err := lockState(ctx, tx, name, false, kilolock.LockExclusive, nil)
		if err != nil {
			return nil, err
		}
		ids[name] = st.id
		for i := range st.Locks {
			if l := &st.Locks[i]; l.PlainWriter() {
				return nil, history.MoveRefusal(name, &kilolock.LockedError{State: name, Holder: l.Info})
			}
		}
		if st.ClientEncryption != nil || st.ClientEncryptionRequired() {
			return nil, history.MoveRefusal(name, fmt.Errorf("state %q: %w", name, kilolock.ErrEncrypted))
		}
	}
	return ids, nil
}

// Moves lists the moves state took part in, newest first.
func (s *Store) Moves(ctx context.Context, state string) ([]history.MoveRecord, error) {
	out, err := list(ctx, s, "moves", func(r Rows, m *history.MoveRecord) error {
		var n int64
		err := r.Scan(&m.ID, &m.From, &m.FromVersion, &m.To, &m.ToVersion, &n, &m.Actor, &m.Created)
		m.Instances = int(n)
		return err
	}, `SELECT m.id, f.name, m.from_version, t.name, m.to_version, m.instances, m.actor, m.created_at
		FROM state_moves m JOIN states f ON f.id = m.from_state_id JOIN states t ON t.id = m.to_state_id
		WHERE f.name = $1 OR t.name = $1 ORDER BY m.id DESC`, state)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Created = out[i].Created.UTC()
	}
	return out, nil
}

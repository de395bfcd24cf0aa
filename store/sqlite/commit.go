package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
)

// Commit appends a version made of c's changes against c.Parent, creating
// the state when it does not exist (c.Parent must then be 0).
//
// It reads the state row and its locks and runs kilolock.CheckCommit inside
// one BEGIN IMMEDIATE transaction: ErrStale when the current version is no
// longer c.Parent; *LockedError, *LockMismatchError or *ConflictError when
// the rules refuse it. Nothing is written when it returns an error, and the
// WriteStats are then zero. Malformed upserts (an object that is not JSON,
// a Hash or ID that does not match the object) are ErrInvalid: the commit
// is checked by kilolock.PrepareCommit before the transaction begins.
//
// The store sets the version's ID, State, Number, Created, Added, Changed,
// Removed and Instances (the counts are of instance objects, computed
// against the parent: an upsert equal to the current object is not a
// change and writes nothing; a removal of an object that is not there is
// ignored), and LockID from c.LockID when c.Version.LockID is empty.
//
// WriteStats counts, for every INSERT and UPDATE the commit runs, the rows
// the database reports affected, and for each such row the bytes of the
// values the statement writes: the length of each TEXT and BLOB value, 8
// for each integer or boolean, 0 for NULL (the values of a WHERE clause,
// database-generated ids and index entries are not counted). A payload
// already stored is not inserted again and counts nothing.
func (s *Store) Commit(ctx context.Context, name string, c *kilolock.Commit) (*kilolock.Version, kilolock.WriteStats, error) {
	p, err := kilolock.PrepareCommit(c)
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	var (
		v     *kilolock.Version
		stats kilolock.WriteStats
	)
	err = s.update(ctx, "commit", func(tx *sql.Tx) error {
		w := &writer{ctx: ctx, tx: tx}
		var err error
		v, err = w.apply(name, c, p)
		stats = w.stats
		return err
	})
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	return v, stats, nil
}

const (
	sqlCurrentInstance = `SELECT hash FROM instance_intervals WHERE state_id = ? AND instance_id = ? AND valid_to IS NULL`
	sqlCloseInstance   = `UPDATE instance_intervals SET valid_to = ? WHERE state_id = ? AND instance_id = ? AND valid_to IS NULL`
	sqlOpenInstance    = `INSERT INTO instance_intervals
(state_id, instance_id, address, module, mode, type, name, index_key, deposed, each, provider, status, hash, valid_from)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlCurrentOutput = `SELECT hash FROM output_intervals WHERE state_id = ? AND name = ? AND valid_to IS NULL`
	sqlCloseOutput   = `UPDATE output_intervals SET valid_to = ? WHERE state_id = ? AND name = ? AND valid_to IS NULL`
	sqlOpenOutput    = `INSERT INTO output_intervals (state_id, name, hash, sensitive, valid_from) VALUES (?, ?, ?, ?, ?)`
	sqlPayload       = `INSERT INTO payloads (state_id, hash, body) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
)

// apply runs the commit c, prepared as p, in w's transaction.
func (w *writer) apply(name string, c *kilolock.Commit, p *kilolock.PreparedCommit) (*kilolock.Version, error) {
	ctx := w.ctx
	st, err := loadState(ctx, w.tx, name)
	missing := errors.Is(err, kilolock.ErrNotFound)
	if err != nil && !missing {
		return nil, err
	}
	if missing {
		st = &stateRow{info: kilolock.StateInfo{Name: name, LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{}}}
	}
	if err := kilolock.CheckCommit(&st.info, c); err != nil {
		return nil, err
	}
	created := now()
	if missing {
		res, _, err := w.write(`INSERT INTO states (name, created_at, lock_mode) VALUES (?, ?, ?)`,
			[]any{name, formatTime(created), string(kilolock.LockExclusive)})
		if err != nil {
			return nil, err
		}
		if st.id, err = res.LastInsertId(); err != nil {
			return nil, err
		}
	}

	number := st.info.Current + 1
	// A state without a version has no current intervals to look up.
	hasCurrent := st.info.Current > 0
	var added, changed, removed int
	for _, u := range p.Upserts {
		in := &u.Instance
		if hasCurrent {
			cur, err := w.current(sqlCurrentInstance, st.id, u.ID)
			if err != nil {
				return nil, err
			}
			switch {
			case cur == nil:
				added++
			case bytes.Equal(cur, in.Hash[:]):
				continue
			default:
				if _, _, err := w.write(sqlCloseInstance, []any{number}, st.id, u.ID); err != nil {
					return nil, err
				}
				changed++
			}
		} else {
			added++
		}
		if _, _, err := w.write(sqlPayload, []any{st.id, in.Hash[:], string(in.Object)}); err != nil {
			return nil, err
		}
		r := &in.Resource
		_, _, err := w.write(sqlOpenInstance, []any{st.id, u.ID, in.Address(), r.Module, r.Mode, r.Type, r.Name,
			in.Key.JSON(), in.Deposed, r.Each, r.Provider, in.Status, in.Hash[:], number})
		if err != nil {
			return nil, err
		}
	}
	for _, id := range p.Removed {
		if !hasCurrent {
			break
		}
		_, n, err := w.write(sqlCloseInstance, []any{number}, st.id, id)
		if err != nil {
			return nil, err
		}
		removed += int(n)
	}

	for _, o := range p.OutputUpserts {
		hash := o.Hash[:]
		if hasCurrent {
			cur, err := w.current(sqlCurrentOutput, st.id, o.Name)
			if err != nil {
				return nil, err
			}
			if bytes.Equal(cur, hash) {
				continue
			}
			if cur != nil {
				if _, _, err := w.write(sqlCloseOutput, []any{number}, st.id, o.Name); err != nil {
					return nil, err
				}
			}
		}
		if _, _, err := w.write(sqlPayload, []any{st.id, hash, o.Body}); err != nil {
			return nil, err
		}
		if _, _, err := w.write(sqlOpenOutput, []any{st.id, o.Name, hash, o.Sensitive, number}); err != nil {
			return nil, err
		}
	}
	for _, name := range p.OutputsRemoved {
		if !hasCurrent {
			break
		}
		if _, _, err := w.write(sqlCloseOutput, []any{number}, st.id, name); err != nil {
			return nil, err
		}
	}

	v := c.Version
	v.State = name
	v.Number = number
	v.Created = created
	if v.LockID == "" {
		v.LockID = c.LockID
	}
	v.Added, v.Changed, v.Removed = added, changed, removed
	v.Instances = st.instances + added - removed
	var checks any
	if c.CheckResults != nil {
		checks = string(c.CheckResults)
	}
	res, _, err := w.write(`INSERT INTO state_versions
(state_id, number, serial, lineage, terraform_version, source, actor, lock_id, base_serial, created_at,
 added, changed, removed, instance_count, format, check_results)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		[]any{st.id, number, int64(v.Serial), v.Lineage, v.TerraformVersion, string(v.Source), v.Actor, v.LockID,
			int64(v.BaseSerial), formatTime(created), v.Added, v.Changed, v.Removed, v.Instances, v.Format, checks})
	if err != nil {
		return nil, err
	}
	if v.ID, err = res.LastInsertId(); err != nil {
		return nil, err
	}
	if c.Raw != nil {
		if _, _, err := w.write(`INSERT INTO version_raw (version_id, raw) VALUES (?, ?)`, []any{v.ID, c.Raw}); err != nil {
			return nil, err
		}
	}
	_, _, err = w.write(`UPDATE states SET current_version = ?, current_version_id = ?, serial = ?, lineage = ? WHERE id = ?`,
		[]any{number, v.ID, int64(v.Serial), v.Lineage}, st.id)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// writer runs a commit's statements in one transaction, preparing each
// once, and counts what they write.
type writer struct {
	ctx   context.Context
	tx    *sql.Tx
	stmts map[string]*sql.Stmt
	stats kilolock.WriteStats
}

func (w *writer) stmt(query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.tx.PrepareContext(w.ctx, query)
	if err != nil {
		return nil, err
	}
	if w.stmts == nil {
		w.stmts = map[string]*sql.Stmt{}
	}
	w.stmts[query] = st // closed with the transaction
	return st, nil
}

// current returns the hash of the current interval a lookup query finds,
// nil when there is none.
func (w *writer) current(query string, args ...any) ([]byte, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	var hash []byte
	err = st.QueryRowContext(w.ctx, args...).Scan(&hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return hash, err
}

// write runs an INSERT or UPDATE that writes the values set (and matches
// rows with the parameters where), and counts the rows it affected and the
// bytes of set in each of them.
func (w *writer) write(query string, set []any, where ...any) (sql.Result, int64, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, 0, err
	}
	res, err := st.ExecContext(w.ctx, append(set, where...)...)
	if err != nil {
		return nil, 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, 0, err
	}
	size := 0
	for _, v := range set {
		size += sqlstore.ValueSize(v)
	}
	w.stats.Rows += int(n)
	w.stats.Bytes += int(n) * size
	return res, n, nil
}

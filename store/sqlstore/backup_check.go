package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// checkContent checks, in a restore's transaction once every row is in,
// what the rows prove of themselves: every instance and output each
// version holds has its payload, whose content hashes to the address the
// intervals name (for a sealed one: opens with its state's data key, and
// its content hashes to the hash sealed with it, whose keyed hash is its
// address), and every sealed document opens with its state's key. So a
// backup whose objects were edited and then compressed again is refused,
// instead of restoring a store whose reads of that state then fail. The
// reads are those of a version's snapshot, a state at a time.
func (s *Store) checkContent(ctx context.Context, tx Tx) error {
	type state struct {
		id   int64
		name string
	}
	var states []state
	rows, err := tx.Query(ctx, `SELECT id, name FROM states ORDER BY id`)
	err = EachRow(rows, err, func(r Rows) error {
		var st state
		err := r.Scan(&st.id, &st.name)
		states = append(states, st)
		return err
	})
	if err != nil {
		return err
	}
	for _, st := range states {
		if err := s.checkStateContent(ctx, tx, st.id, st.name); err != nil {
			var se *StoreError
			if errors.As(err, &se) {
				return contentMismatch(st.name, se.Msg)
			}
			return err
		}
	}
	return nil
}

// checkStateContent checks one state's objects and sealed documents (see
// checkContent): a *StoreError names what does not match.
func (s *Store) checkStateContent(ctx context.Context, tx Tx, stateID int64, name string) error {
	var key *stateKey
	b := &Batch{}
	b.Query(scanStateKey(&key), `SELECT key_id, wrapped FROM state_keys WHERE state_id = $1`, stateID)
	b.Query(func(r Rows) error {
		_, err := s.scanInstance(r, nil)
		return err
	}, `SELECT `+instanceSelect+` FROM instance_intervals i LEFT JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
		WHERE i.state_id = $1`, stateID)
	b.Query(func(r Rows) error {
		var (
			output             string
			hash, body, sealed []byte
			found              bool
			rk                 rowKey
		)
		if err := r.Scan(&output, &hash, &found, &body, &sealed, &rk.keyID, &rk.wrapped); err != nil {
			return err
		}
		what := "stored output " + output
		if !found {
			return corrupt("%s: no payload has its address %x", what, hash)
		}
		want := hash
		if sealed != nil {
			h, plain, err := s.openPayload(rk.key(), hash, sealed, what)
			if err != nil {
				return err
			}
			want, body = h[:], plain
		}
		if h := graph.NewOutput(output, body).Hash; string(h[:]) != string(want) {
			return corrupt("%s: its body does not hash to %x", what, want)
		}
		return nil
	}, `SELECT i.name, i.hash, p.hash IS NOT NULL, p.body, p.sealed, `+sealedKey("i")+`
		FROM output_intervals i LEFT JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
		WHERE i.state_id = $1`, stateID)
	if err := tx.Send(ctx, b); err != nil {
		return err
	}
	// The sealed documents, after the batch that read the state's key.
	rows, err := tx.Query(ctx, `SELECT v.number, r.raw FROM version_raw r JOIN state_versions v ON v.id = r.version_id
		WHERE v.state_id = $1 AND r.sealed`, stateID)
	return EachRow(rows, err, func(r Rows) error {
		v := kilolock.Version{State: name}
		var raw []byte
		if err := r.Scan(&v.Number, &raw); err != nil {
			return err
		}
		_, err := s.openRaw(key, raw, &v)
		return err
	})
}

// contentMismatch is a restore refused because what a row holds is not
// what its address or seal says.
func contentMismatch(state, what string) error {
	return &kilolock.InvalidError{Code: "backup_content_mismatch",
		Message: fmt.Sprintf("state %s in the backup: %s", state, strings.TrimSuffix(what, ": the database is corrupt")),
		Hint:    "the file was altered after kl backup wrote it, or damaged and compressed again: restore an unaltered copy; nothing was restored"}
}

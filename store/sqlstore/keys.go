package sqlstore

import (
	"context"
	"slices"

	"github.com/kilolock/kilolock"
)

var _ kilolock.KeyStore = (*Store)(nil)

// KeyUsage lists the keys that wrap the states' data keys and the
// configured ones: the active key first, then by ID. One grouped scan of
// state_keys's key index.
func (s *Store) KeyUsage(ctx context.Context) ([]kilolock.KeyUsage, error) {
	out, err := list(ctx, s, "key usage", func(r Rows, u *kilolock.KeyUsage) error { return r.Scan(&u.KeyID, &u.States) },
		`SELECT key_id, count(*) FROM state_keys GROUP BY key_id ORDER BY key_id{C}`)
	if err != nil {
		return nil, err
	}
	if s.seal == nil {
		return out, nil
	}
	ring := s.seal.ring
	for _, id := range ring.IDs() {
		if !slices.ContainsFunc(out, func(u kilolock.KeyUsage) bool { return u.KeyID == id }) {
			out = append(out, kilolock.KeyUsage{KeyID: id})
		}
	}
	for i := range out {
		out[i].Configured = ring.Has(out[i].KeyID)
		out[i].Active = out[i].KeyID == ring.Active()
	}
	slices.SortStableFunc(out, func(a, b kilolock.KeyUsage) int {
		switch {
		case a.Active != b.Active:
			if a.Active {
				return -1
			}
			return 1
		case a.KeyID < b.KeyID:
			return -1
		case a.KeyID > b.KeyID:
			return 1
		}
		return 0
	})
	return out, nil
}

// RewrapKeys re-wraps with the active key at most limit data keys that
// other keys wrap, in one transaction, and counts those that remain. Each
// update names the wrapped bytes it read, so a key another process
// re-wrapped meanwhile is left as that process left it; readers and
// writers meanwhile unwrap either bytes to the same data key.
func (s *Store) RewrapKeys(ctx context.Context, limit int) (rewrapped, remaining int64, err error) {
	if s.seal == nil {
		return 0, 0, &kilolock.RefusedError{Code: "encryption_off", Message: "no encryption key is configured, so there is nothing to rotate to",
			Hint: "configure the new key first in the key file (--encryption-key-file or KL_ENCRYPTION_KEY), the old ones after it"}
	}
	if limit <= 0 {
		limit = 100
	}
	ring := s.seal.ring
	active := ring.Active()
	err = s.write(ctx, "rewrap keys", func(tx Tx) error {
		rewrapped, remaining = 0, 0
		type row struct {
			stateID int64
			k       stateKey
		}
		var todo []row
		rows, err := tx.Query(ctx, `SELECT state_id, key_id, wrapped FROM state_keys WHERE key_id <> $1 ORDER BY state_id LIMIT $2`, active, int64(limit))
		err = EachRow(rows, err, func(r Rows) error {
			var x row
			err := r.Scan(&x.stateID, &x.k.keyID, &x.k.wrapped)
			todo = append(todo, x)
			return err
		})
		if err != nil {
			return err
		}
		b := &Batch{}
		for _, x := range todo {
			if !ring.Has(x.k.keyID) {
				return unknownKey(ring, []string{x.k.keyID})
			}
			dk, err := ring.Unwrap(x.k.keyID, x.k.wrapped)
			if err != nil {
				return wrongKey(x.k.keyID, err)
			}
			id, wrapped, err := ring.Wrap(dk)
			if err != nil {
				return err
			}
			b.Exec(func(n int64) error { rewrapped += n; return nil },
				`UPDATE state_keys SET key_id = $2, wrapped = $3, wrapped_at = {now} WHERE state_id = $1 AND wrapped = $4`,
				x.stateID, id, wrapped, x.k.wrapped)
		}
		b.Query(func(r Rows) error { return r.Scan(&remaining) }, `SELECT count(*) FROM state_keys WHERE key_id <> $1`, active)
		return tx.Send(ctx, b)
	})
	if err != nil {
		return 0, 0, err
	}
	return rewrapped, remaining, nil
}

package kilolock

import (
	"context"
	"time"
)

// Encryption at rest. A store opened with a keyring (store.WithKeyring)
// seals what Terraform marks sensitive, and the raw documents it keeps,
// with AES-256-GCM under a data key of each state, which the keyring's
// active key wraps. A payload holding a secret is kept twice: sealed
// whole, so it reads back byte for byte, and in the clear with each
// sensitive value replaced by SensitiveMask (MaskedInstanceObject,
// MaskedOutputObject), so that the views users query keep every other
// attribute. Such a payload is addressed by a keyed hash of its content
// hash, not by the content hash, which would let anyone who reads the
// database test guesses of a low-entropy secret offline.

// KeyUsage is one key-encryption key: how many states' data keys it
// wraps, and whether it is configured (and active).
type KeyUsage struct {
	KeyID      string `json:"key_id"`
	States     int64  `json:"states"`
	Configured bool   `json:"configured"`
	Active     bool   `json:"active"`
}

// KeyStore is a Store that encrypts at rest with a keyring.
type KeyStore interface {
	// KeyUsage lists the keys that wrap data keys and the configured
	// ones, the active key first, then by ID. Empty (not nil) when the
	// store has no keyring and holds nothing encrypted.
	KeyUsage(ctx context.Context) ([]KeyUsage, error)
	// RewrapKeys re-wraps with the active key at most limit data keys
	// that another key wraps, and returns how many it re-wrapped and how
	// many remain. A data key itself never changes, so nothing else is
	// rewritten and readers and writers go on meanwhile; several
	// processes may re-wrap at once. A *RefusedError when the store has
	// no keyring.
	RewrapKeys(ctx context.Context, limit int) (rewrapped, remaining int64, err error)
}

// KeyRotation is the progress of Engine.RotateKeys.
type KeyRotation struct {
	Active    string    `json:"active_key"`
	Total     int64     `json:"total"` // data keys another key wrapped when it started
	Done      int64     `json:"rewrapped"`
	Remaining int64     `json:"remaining"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished,omitzero"`
	Error     string    `json:"error,omitempty"`
}

// rotateBatch is how many data keys one transaction of RotateKeys
// re-wraps.
const rotateBatch = 100

// RotateKeys re-wraps every state's data key with the active key, a
// batch per transaction, calling progress after each batch (and at the
// start). A *RefusedError when the store does not encrypt at rest.
func (e *Engine) RotateKeys(ctx context.Context, progress func(KeyRotation)) (KeyRotation, error) {
	r := KeyRotation{Started: e.now().UTC()}
	ks, ok := e.store.(KeyStore)
	if !ok {
		return r, noKeyStore()
	}
	usage, err := ks.KeyUsage(ctx)
	if err != nil {
		return r, err
	}
	for _, u := range usage {
		if u.Active {
			r.Active = u.KeyID
		} else {
			r.Total += u.States
		}
	}
	r.Remaining = r.Total
	if progress != nil {
		progress(r)
	}
	for {
		n, remaining, err := ks.RewrapKeys(ctx, rotateBatch)
		if err != nil {
			r.Error = err.Error()
			return r, err
		}
		r.Done += n
		r.Remaining = remaining
		r.Total = max(r.Total, r.Done+remaining)
		if remaining == 0 || n == 0 {
			r.Finished = e.now().UTC()
		}
		if progress != nil {
			progress(r)
		}
		if !r.Finished.IsZero() {
			return r, nil
		}
	}
}

// KeyUsage lists the store's keys (see KeyStore.KeyUsage); a
// *RefusedError when it does not encrypt at rest.
func (e *Engine) KeyUsage(ctx context.Context) ([]KeyUsage, error) {
	ks, ok := e.store.(KeyStore)
	if !ok {
		return nil, noKeyStore()
	}
	return ks.KeyUsage(ctx)
}

func noKeyStore() error {
	return &RefusedError{Code: "encryption_unsupported", Message: "this store does not encrypt at rest",
		Hint: "open a SQL store (store.Open) with store.WithKeyring"}
}

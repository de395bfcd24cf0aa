package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/storekit"
)

// Encryption at rest (see kilolock.KeyStore and the dialects' migrations
// 0012/0013): each state has at most one data key, in state_keys, created
// under the state's row lock by the first commit that seals something and
// never changed after (rotation re-wraps it). So every payload a state
// ever sealed opens with the one data key its row holds, and its address
// (a keyed hash) is the same whoever computes it.

// sealing is a store's keyring and the data keys it has unwrapped, by
// their wrapped bytes: those are unique and never reused, so a cached key
// is always the one a row holds, even after its state was deleted and
// made again.
type sealing struct {
	ring *keyring.Ring
	mu   sync.Mutex
	keys map[string]*keyring.DataKey
}

// maxCachedKeys bounds the unwrapped data keys a store keeps: past it the
// cache starts again (unwrapping costs microseconds).
const maxCachedKeys = 100_000

// sqlStateKey reads the data key of the state named $1.
const sqlStateKey = `SELECT k.key_id, k.wrapped FROM state_keys k WHERE k.state_id = ` + sqlStateID

// stateKey is a state's data key as a transaction read it (or made it).
type stateKey struct {
	keyID   string
	wrapped []byte
	dk      *keyring.DataKey
	fresh   bool // made by this commit: to insert
}

// scanStateKey reads a sqlStateKey row into k.
func scanStateKey(k **stateKey) func(Rows) error {
	return func(r Rows) error {
		sk := &stateKey{}
		if err := r.Scan(&sk.keyID, &sk.wrapped); err != nil {
			return err
		}
		*k = sk
		return nil
	}
}

// open returns k with its data key unwrapped. A store without a keyring,
// or without the key that wrapped it, gives a *kilolock.KeyError.
func (s *Store) open(k *stateKey) (*stateKey, error) {
	if k == nil || k.dk != nil {
		return k, nil
	}
	if s.seal == nil {
		return nil, missingKey(k.keyID)
	}
	s.seal.mu.Lock()
	dk := s.seal.keys[string(k.wrapped)]
	s.seal.mu.Unlock()
	if dk == nil {
		if !s.seal.ring.Has(k.keyID) {
			return nil, unknownKey(s.seal.ring, []string{k.keyID})
		}
		var err error
		if dk, err = s.seal.ring.Unwrap(k.keyID, k.wrapped); err != nil {
			return nil, wrongKey(k.keyID, err)
		}
		s.seal.mu.Lock()
		if len(s.seal.keys) >= maxCachedKeys {
			clear(s.seal.keys)
		}
		s.seal.keys[string(k.wrapped)] = dk
		s.seal.mu.Unlock()
	}
	return &stateKey{keyID: k.keyID, wrapped: k.wrapped, dk: dk}, nil
}

// newStateKey makes a data key for a state that has none, wrapped by the
// active key.
func (s *Store) newStateKey() (*stateKey, error) {
	dk, err := keyring.NewDataKey()
	if err != nil {
		return nil, err
	}
	id, wrapped, err := s.seal.ring.Wrap(dk)
	if err != nil {
		return nil, err
	}
	return &stateKey{keyID: id, wrapped: wrapped, dk: dk, fresh: true}, nil
}

// sealedCommit is what a commit seals, worked out before its transaction:
// the masked bodies of the payloads holding sensitive values, by content
// hash.
type sealedCommit struct {
	masked map[graph.Hash][]byte
}

// prepareSeal masks the sensitive payloads of p, prepared from c (nil
// without a keyring, or when p holds none).
func (s *Store) prepareSeal(c *kilolock.Commit, p *storekit.PreparedCommit) (*sealedCommit, error) {
	if s.seal == nil {
		return nil, nil
	}
	sc := &sealedCommit{masked: map[graph.Hash][]byte{}}
	for i := range p.Upserts {
		in := p.Upserts[i].Instance
		obj, err := c.Object(in)
		if err != nil {
			return nil, err
		}
		if m, ok := graph.MaskedInstanceObject(obj); ok {
			sc.masked[in.Hash] = m
		}
	}
	for i := range p.OutputUpserts {
		o := &p.OutputUpserts[i]
		if m, ok := graph.MaskedOutputObject([]byte(o.Body)); ok {
			sc.masked[o.Hash] = m
		}
	}
	return sc, nil
}

// sensitive reports whether the payload of content hash h is sealed.
func (sc *sealedCommit) sensitive(h graph.Hash) bool {
	if sc == nil {
		return false
	}
	_, ok := sc.masked[h]
	return ok
}

// needsKey reports whether the commit seals anything.
func (sc *sealedCommit) needsKey(c *kilolock.Commit) bool {
	return sc != nil && (len(sc.masked) > 0 || c.Raw != nil)
}

// rawAAD binds a sealed raw document to its version number.
func rawAAD(number int64) []byte { return []byte("raw:" + strconv.FormatInt(number, 10)) }

// sealPayload seals a payload's object stored at addr: its content hash
// and the object, so that opening gives both (HashesAt needs the hash,
// which for an instance covers a resource header a payload does not
// hold), bound to addr.
func sealPayload(k *stateKey, addr []byte, h graph.Hash, object []byte) []byte {
	return k.dk.Seal(append(h[:len(h):len(h)], object...), addr)
}

// openPayload opens what sealPayload sealed at addr, checking that addr
// is the keyed hash of the content hash inside; what names the payload
// in errors.
func (s *Store) openPayload(k *stateKey, addr, sealed []byte, what string) (graph.Hash, []byte, error) {
	k, err := s.open(k)
	if err != nil {
		return graph.Hash{}, nil, err
	}
	if k == nil {
		return graph.Hash{}, nil, corrupt("%s is sealed, but its state has no data key: the database is corrupt", what)
	}
	plain, err := k.dk.Open(sealed, addr)
	if err != nil || len(plain) < len(graph.Hash{}) {
		return graph.Hash{}, nil, corrupt("%s: the sealed object does not open with its state's data key: the database is corrupt", what)
	}
	h := graph.Hash(plain[:len(graph.Hash{})])
	if a := k.dk.Address(h); string(a[:]) != string(addr) {
		return graph.Hash{}, nil, corrupt("%s: its address is not the keyed hash of its content: the database is corrupt", what)
	}
	return h, plain[len(h):], nil
}

// sealedKey is the columns a read of payloads adds to find the data key
// of a sealed one: the key of the state (alias of the table holding
// state_id given) of a row whose payload p is sealed, else NULLs, so rows
// in the clear cost no probe.
func sealedKey(alias string) string {
	return `CASE WHEN p.sealed IS NULL THEN NULL ELSE (SELECT k.key_id FROM state_keys k WHERE k.state_id = ` + alias + `.state_id) END,
		CASE WHEN p.sealed IS NULL THEN NULL ELSE (SELECT k.wrapped FROM state_keys k WHERE k.state_id = ` + alias + `.state_id) END`
}

// rowKey is the key columns of sealedKey, as scanned.
type rowKey struct {
	keyID   *string
	wrapped []byte
}

func (rk *rowKey) key() *stateKey {
	if rk.keyID == nil {
		return nil
	}
	return &stateKey{keyID: *rk.keyID, wrapped: rk.wrapped}
}

// openRaw opens a version's sealed raw document.
func (s *Store) openRaw(k *stateKey, raw []byte, v *kilolock.Version) ([]byte, error) {
	k, err := s.open(k)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, corrupt("the raw document of version %d of %q is sealed, but its state has no data key: the database is corrupt", v.Number, v.State)
	}
	plain, err := k.dk.Open(raw, rawAAD(v.Number))
	if err != nil {
		return nil, corrupt("the raw document of version %d of %q does not open with its state's data key: the database is corrupt", v.Number, v.State)
	}
	return plain, nil
}

// missingKey is a sealed state read, or written, by a store without a
// keyring.
func missingKey(keyID string) error {
	return &kilolock.KeyError{Code: "encryption_key_missing", Needed: []string{keyID},
		Message: "the database holds values encrypted at rest with key " + keyID + ", and no encryption key is configured",
		Hint:    "start with --encryption-key-file FILE (or KL_ENCRYPTION_KEY) holding that key; every replica needs the same keys"}
}

// unknownKey is data keys wrapped by keys the ring does not hold.
func unknownKey(ring *keyring.Ring, ids []string) error {
	return &kilolock.KeyError{Code: "encryption_key_unknown", Needed: ids,
		Message: "the database's data keys are wrapped by " + plural(len(ids), "key ", "keys ") + joinIDs(ids) + ", which the configured keys (" + joinIDs(ring.IDs()) + ") do not include",
		Hint:    "add the key(s) named to the key file (--encryption-key-file; a key listed after the first only unwraps); remove an old key only after `kl keys rotate` re-wrapped everything it wrapped"}
}

// wrongKey is a key whose ID matches but that does not unwrap.
func wrongKey(id string, err error) error {
	if !errors.Is(err, keyring.ErrDecrypt) {
		return err
	}
	return &kilolock.KeyError{Code: "encryption_key_wrong", Needed: []string{id},
		Message: "key " + id + " does not unwrap the data keys it should: the stored data key is damaged",
		Hint:    "restore the state_keys table from a backup; nothing else can open it"}
}

func joinIDs(ids []string) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += id
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// UseKeyring checks the database against ring (nil for none) and makes
// the store seal with it (see checkKeys): found when the store opens, not
// at the first read. Stores call it when they open, before serving.
func (s *Store) UseKeyring(ctx context.Context, ring *keyring.Ring) error {
	if err := s.read(ctx, "check keys", func(tx Tx) error { return checkKeys(ctx, tx, ring) }); err != nil {
		return err
	}
	if ring == nil {
		s.seal = nil
		return nil
	}
	s.seal = &sealing{ring: ring, keys: map[string]*keyring.DataKey{}}
	return nil
}

// ring is the keyring the store seals with, nil when none.
func (s *Store) ring() *keyring.Ring {
	if s.seal == nil {
		return nil
	}
	return s.seal.ring
}

// checkKeys checks, in tx, that ring (nil for none) unwraps the data keys
// the database holds: one that ring cannot unwrap — ring is nil, or lacks
// a key that wraps some — is a *kilolock.KeyError naming the keys. Each
// key the database needs is proven by unwrapping one data key it wraps.
func checkKeys(ctx context.Context, tx Tx, ring *keyring.Ring) error {
	type use struct {
		id      string
		wrapped []byte
	}
	var uses []use
	rows, err := tx.Query(ctx, `SELECT k.key_id, (SELECT w.wrapped FROM state_keys w WHERE w.key_id = k.key_id LIMIT 1)
		FROM (SELECT DISTINCT key_id FROM state_keys) k ORDER BY k.key_id`)
	err = EachRow(rows, err, func(r Rows) error {
		var u use
		err := r.Scan(&u.id, &u.wrapped)
		uses = append(uses, u)
		return err
	})
	if err != nil {
		return err
	}
	if ring == nil {
		if len(uses) > 0 {
			return missingKey(uses[0].id)
		}
		return nil
	}
	var unknown []string
	for _, u := range uses {
		if !ring.Has(u.id) {
			unknown = append(unknown, u.id)
		}
	}
	if len(unknown) > 0 {
		return unknownKey(ring, unknown)
	}
	for _, u := range uses {
		if _, err := ring.Unwrap(u.id, u.wrapped); err != nil {
			return wrongKey(u.id, err)
		}
	}
	return nil
}

package keyring

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
)

// DataKey is one state's data key: it seals the state's secrets and
// addresses the payloads that hold them. Its two uses have keys of their
// own, derived from it with HKDF-SHA256. It is safe for concurrent use.
type DataKey struct {
	secret [KeySize]byte
	aead   cipher.AEAD
	mac    [KeySize]byte
}

// String shows nothing of the key, so that a data key printed in a log or
// an error leaks none of it.
func (dk *DataKey) String() string { return "keyring.DataKey(hidden)" }

// GoString is String, for %#v.
func (dk *DataKey) GoString() string { return dk.String() }

// NewDataKey returns a new random data key.
func NewDataKey() (*DataKey, error) {
	b := make([]byte, KeySize)
	rand.Read(b)
	return newDataKey(b)
}

func newDataKey(secret []byte) (*DataKey, error) {
	dk := &DataKey{}
	copy(dk.secret[:], secret)
	enc, err := hkdf.Key(sha256.New, secret, nil, "kilolock seal v1", KeySize)
	if err != nil {
		return nil, fmt.Errorf("keyring: derive the sealing key: %w", err)
	}
	mac, err := hkdf.Key(sha256.New, secret, nil, "kilolock address v1", KeySize)
	if err != nil {
		return nil, fmt.Errorf("keyring: derive the address key: %w", err)
	}
	copy(dk.mac[:], mac)
	if dk.aead, err = newGCM(enc); err != nil {
		return nil, err
	}
	return dk, nil
}

// Seal encrypts plaintext, bound to aad (which Open must be given again).
// The result carries its random nonce and its tag: 29 bytes more than
// plaintext.
func (dk *DataKey) Seal(plaintext, aad []byte) []byte { return seal(dk.aead, plaintext, aad) }

// Open decrypts what Seal sealed with the same aad; ErrDecrypt when the
// key or aad differ or a byte was changed.
func (dk *DataKey) Open(sealed, aad []byte) ([]byte, error) { return open(dk.aead, sealed, aad) }

// Address is the keyed hash (HMAC-SHA256) of a content hash: what a
// payload holding a secret is stored under, so that its plain content
// hash, which a guess of a low-entropy secret could be tested against,
// is never stored.
func (dk *DataKey) Address(hash [sha256.Size]byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, dk.mac[:])
	m.Write(hash[:])
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

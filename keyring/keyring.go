package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the size of every key: AES-256.
const KeySize = 32

// ErrDecrypt is a ciphertext that does not open with the key given: the
// wrong key, or bytes changed since they were sealed.
var ErrDecrypt = errors.New("keyring: the ciphertext does not open with this key")

// Key is a key-encryption key.
type Key struct {
	// ID is the key's fingerprint (see KeyID).
	ID     string
	secret [KeySize]byte
}

// KeyID is the fingerprint a key is known by: "k" and 16 hex digits of a
// SHA-256 of the key, which tells keys apart without revealing them.
func KeyID(secret []byte) string {
	h := sha256.Sum256(append([]byte("kilolock key id\x00"), secret...))
	return "k" + hex.EncodeToString(h[:8])
}

// Ring is the configured key-encryption keys, the active one first.
type Ring struct {
	keys []Key
}

// String names the ring's keys by ID, never by their bytes, so that a
// ring printed in a log or an error shows no key (%v, %+v and %#v too).
func (r *Ring) String() string {
	if r == nil {
		return "keyring.Ring(none)"
	}
	return "keyring.Ring" + fmt.Sprint(r.IDs())
}

// GoString is String, for %#v.
func (r *Ring) GoString() string { return r.String() }

// String names the key by its ID, never by its bytes.
func (k Key) String() string { return "keyring.Key(" + k.ID + ")" }

// GoString is String, for %#v.
func (k Key) GoString() string { return k.String() }

// Parse reads keys from text: one base64-encoded (standard or URL
// alphabet, padded or not) 32-byte key per line or between commas; blank
// lines and lines starting with '#' are skipped. The first key is the
// active one. A line that is not such a key is an error that names it by
// number, never by its content.
func Parse(text []byte) (*Ring, error) {
	r := &Ring{}
	seen := map[string]bool{}
	for n, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, field := range strings.Split(line, ",") {
			field = strings.TrimSpace(field)
			if field == "" {
				continue
			}
			secret, err := decodeKey(field)
			if err != nil {
				return nil, fmt.Errorf("keyring: line %d: %w", n+1, err)
			}
			k := Key{ID: KeyID(secret)}
			copy(k.secret[:], secret)
			if seen[k.ID] {
				continue
			}
			seen[k.ID] = true
			r.keys = append(r.keys, k)
		}
	}
	if len(r.keys) == 0 {
		return nil, errors.New("keyring: no key: give one base64-encoded 32-byte key per line (e.g. from `kl keys generate`)")
	}
	return r, nil
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("a key is %d bytes, this one %d", KeySize, len(b))
			}
			return b, nil
		}
	}
	return nil, errors.New("not a base64-encoded key")
}

// Load returns the ring of a key file (when file is not "") and of env
// (the value of KL_ENCRYPTION_KEY, when not ""): the file's keys first, so
// its first key is the active one, else env's first. Nil, nil when both
// are empty: no encryption. A key file that is given but holds no key
// (an empty file, a secret that was not mounted) is an error, not "no
// encryption": it would store in the clear what was meant to be sealed.
// So is a key file others may read or write (a *ModeError; see
// CheckFileMode).
func Load(file, env string) (*Ring, error) {
	var text []byte
	if file != "" {
		if _, err := CheckFileMode(file); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("keyring: read the key file: %w", err)
		}
		if _, err := Parse(b); err != nil {
			return nil, fmt.Errorf("keyring: the key file %s: %w", file, err)
		}
		text = b
	}
	if env != "" {
		text = append(append(text, '\n'), env...)
	}
	if len(text) == 0 {
		return nil, nil
	}
	return Parse(text)
}

// Generate returns a new random key, base64-encoded as Parse reads it.
func Generate() string {
	b := make([]byte, KeySize)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// Active returns the ID of the key that wraps new data keys.
func (r *Ring) Active() string { return r.keys[0].ID }

// IDs returns the IDs of the ring's keys, the active one first.
func (r *Ring) IDs() []string {
	ids := make([]string, len(r.keys))
	for i := range r.keys {
		ids[i] = r.keys[i].ID
	}
	return ids
}

// Has reports whether the ring holds the key id.
func (r *Ring) Has(id string) bool { return r.key(id) != nil }

func (r *Ring) key(id string) *Key {
	for i := range r.keys {
		if r.keys[i].ID == id {
			return &r.keys[i]
		}
	}
	return nil
}

// wrapAAD binds a wrapped data key to its use.
var wrapAAD = []byte("kilolock data key v1")

// Wrap encrypts dk with the active key; it returns that key's ID and the
// wrapped bytes.
func (r *Ring) Wrap(dk *DataKey) (keyID string, wrapped []byte, err error) {
	k := &r.keys[0]
	a, err := newGCM(k.secret[:])
	if err != nil {
		return "", nil, err
	}
	return k.ID, seal(a, dk.secret[:], wrapAAD), nil
}

// Unwrap decrypts a data key that the key keyID wrapped. An error naming
// the key when the ring does not hold it; ErrDecrypt when it does not open.
func (r *Ring) Unwrap(keyID string, wrapped []byte) (*DataKey, error) {
	k := r.key(keyID)
	if k == nil {
		return nil, fmt.Errorf("keyring: key %s is not configured", keyID)
	}
	a, err := newGCM(k.secret[:])
	if err != nil {
		return nil, err
	}
	secret, err := open(a, wrapped, wrapAAD)
	if err != nil {
		return nil, err
	}
	if len(secret) != KeySize {
		return nil, ErrDecrypt
	}
	return newDataKey(secret)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return cipher.NewGCM(b)
}

// sealVersion is the first byte of everything sealed: the layout
// version || nonce || ciphertext and tag.
const sealVersion = 1

func seal(a cipher.AEAD, plaintext, aad []byte) []byte {
	out := make([]byte, 1+a.NonceSize(), 1+a.NonceSize()+len(plaintext)+a.Overhead())
	out[0] = sealVersion
	rand.Read(out[1:])
	return a.Seal(out, out[1:], plaintext, aad)
}

func open(a cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	n := a.NonceSize()
	if len(sealed) < 1+n+a.Overhead() || sealed[0] != sealVersion {
		return nil, ErrDecrypt
	}
	b, err := a.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return b, nil
}

/*
Package keyring holds the keys of KiloLock's encryption at rest: the
key-encryption keys an operator configures (a Ring, one of them active)
and the per-state data keys they wrap (DataKey), all AES-256-GCM.

# Basics

A Ring is parsed from text, one base64-encoded 32-byte key per line (the
file of kld --encryption-key-file, or KL_ENCRYPTION_KEY, where commas may
separate the keys too). The first key is the active one: it wraps every
new data key. The others only unwrap, while `kl keys rotate` re-wraps what
they wrapped:

	ring, err := keyring.Parse([]byte("q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="))
	dk, err := keyring.NewDataKey()
	id, wrapped, err := ring.Wrap(dk)     // stored with the state
	dk, err = ring.Unwrap(id, wrapped)    // when it is read back
	sealed := dk.Seal(plaintext, aad)     // nonce and tag included
	plain, err := dk.Open(sealed, aad)    // ErrDecrypt if anything was changed

A key is known by its ID, a fingerprint of the key itself, so a database
records which key wraps each data key without holding the key, and a
process started with another key is told which one the database needs.

# Caveats

A DataKey's Address is a keyed hash (HMAC-SHA256): it addresses a payload
that holds a secret without letting anyone who reads the database test
guesses of the secret against a plain SHA-256 of it.
*/
package keyring

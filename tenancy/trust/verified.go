package trust

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
)

// maxVerified bounds the tokens whose verified signature is remembered; a
// CI job sends one token to every request of its run (10–20 for an apply),
// so a few thousand cover many jobs at once.
const maxVerified = 4096

// verifiedToken is a token whose signature verified with a key of snap,
// and its parsed claims. It serves only while snap is still the issuer's
// current key set: a refresh (every Options.RefreshEvery at most, or on a
// rotation) makes every token verify again, so a withdrawn key stops
// working for tokens it verified before as for new ones. Times, audience
// and claims are checked on every request all the same.
type verifiedToken struct {
	snap   *keySnapshot
	idt    *oidc.IDToken
	claims map[string]json.RawMessage
}

// verifiedTokens remembers verified tokens by the SHA-256 of their bytes,
// so that the requests of one run pay the signature check once.
type verifiedTokens struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*verifiedToken
}

// get returns the token of sum verified with snap, nil when there is none.
func (c *verifiedTokens) get(sum [sha256.Size]byte, snap *keySnapshot) *verifiedToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.m[sum]; t != nil && t.snap == snap {
		return t
	}
	return nil
}

// put remembers t under sum, forgetting them all when full: the tokens in
// use are verified again once, and the memory stays bounded.
func (c *verifiedTokens) put(sum [sha256.Size]byte, t *verifiedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxVerified {
		c.m = make(map[[sha256.Size]byte]*verifiedToken)
	}
	c.m[sum] = t
}

// usedKeysKey carries a **keySnapshot through go-oidc to VerifySignature,
// which sets it to the key set that verified the token.
type usedKeysKey struct{}

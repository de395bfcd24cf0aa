package trust

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
)

// maxKeys bounds the keys kept of one issuer (GitHub publishes 2–3).
const maxKeys = 100

// issuerKeys is the cached discovery document and key set of one issuer:
// an oidc.KeySet that refreshes when its keys are older than
// Options.RefreshEvery (so a withdrawn key stops working) and on a key id
// it does not know, but never fetches more than once per
// Options.MinFetchInterval, whatever tokens arrive.
type issuerKeys struct {
	issuer string
	opts   *Options
	client *http.Client

	snap atomic.Pointer[keySnapshot]
	used atomic.Int64 // unix nanoseconds of the last verification, for eviction

	mu        sync.Mutex // one fetch at a time; guards what follows
	lastFetch time.Time  // when the last fetch started, successful or not
	lastErr   error
}

// keySnapshot is one successful fetch, never modified once stored.
type keySnapshot struct {
	keys       []jose.JSONWebKey
	jwksURL    string
	fetched    time.Time
	discovered time.Time
}

var _ oidc.KeySet = (*issuerKeys)(nil)

// failureKey carries a **Error through go-oidc, which flattens the
// KeySet's error into text, so that Verify can answer the precise one.
type failureKey struct{}

// VerifySignature implements oidc.KeySet: it returns the payload of jwt
// once its signature verifies with a current key of the issuer.
func (k *issuerKeys) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	fail := func(e *Error) ([]byte, error) {
		if slot, ok := ctx.Value(failureKey{}).(**Error); ok {
			*slot = e
		}
		return nil, e
	}
	algs := []jose.SignatureAlgorithm{jose.RS256, jose.ES256}
	// Compact only: Verify let through nothing else (LooksLikeIDToken).
	jws, err := jose.ParseSignedCompact(jwt, algs)
	if err != nil || len(jws.Signatures) != 1 {
		return fail(&Error{Code: CodeCredentialsInvalid, Check: CheckSignature, Message: "the token is not a JWS with one RS256 or ES256 signature", Hint: "give the job's OIDC ID token as it is", Err: err})
	}
	h := jws.Signatures[0].Header
	snap, e := k.current(ctx)
	if e != nil {
		return fail(e)
	}
	candidates := snap.find(h.KeyID, h.Algorithm)
	if len(candidates) == 0 {
		// A new key id is how a rotation shows: look once more, at the
		// rate the issuer is allowed to be asked.
		if snap, e = k.refresh(ctx, snap, true); e != nil {
			return fail(e)
		}
		if candidates = snap.find(h.KeyID, h.Algorithm); len(candidates) == 0 {
			return fail(refuse(CheckSignature, fmt.Sprintf("the token's key id %s is not one of the %s keys issuer %s publishes", short(h.KeyID), h.Algorithm, k.issuer),
				fmt.Sprintf("a key the issuer withdrew no longer verifies; if it has just rotated its keys, retry in %s", k.opts.MinFetchInterval)))
		}
	}
	for _, key := range candidates {
		if payload, err := jws.Verify(key.Key); err == nil {
			k.used.Store(time.Now().UnixNano())
			if slot, ok := ctx.Value(usedKeysKey{}).(**keySnapshot); ok {
				*slot = snap
			}
			return payload, nil
		}
	}
	return fail(refuse(CheckSignature, fmt.Sprintf("the token's signature does not verify with the key %s of issuer %s", short(h.KeyID), k.issuer),
		"the token was altered or not signed by the issuer: mint a fresh one in the job"))
}

// current returns keys fetched less than RefreshEvery ago, fetching them
// when they are older.
func (k *issuerKeys) current(ctx context.Context) (*keySnapshot, *Error) {
	snap := k.snap.Load()
	if snap != nil && time.Since(snap.fetched) < k.opts.RefreshEvery {
		return snap, nil
	}
	return k.refresh(ctx, snap, false)
}

// refresh fetches the issuer's keys, unless another caller did while this
// one waited, or the last fetch started less than MinFetchInterval ago.
// seen is the snapshot the caller found wanting; forKeyID says it lacked a
// key id rather than being old. When no fetch succeeds, keys are served
// until they are StaleFor past their refresh, so that an issuer's short
// outage does not refuse every job; then the answer is ErrIssuerUnavailable.
func (k *issuerKeys) refresh(ctx context.Context, seen *keySnapshot, forKeyID bool) (*keySnapshot, *Error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	cur := k.snap.Load()
	if cur != nil && cur != seen && (forKeyID || now.Sub(cur.fetched) < k.opts.RefreshEvery) {
		return cur, nil // fetched by another caller meanwhile
	}
	if k.lastFetch.IsZero() || now.Sub(k.lastFetch) >= k.opts.MinFetchInterval {
		k.lastFetch = now
		next, err := k.fetch(ctx, cur)
		if err == nil {
			k.snap.Store(next)
			return next, nil
		}
		k.lastErr = err
	}
	if cur != nil && now.Sub(cur.fetched) < k.opts.RefreshEvery+k.opts.StaleFor {
		return cur, nil
	}
	return nil, &Error{Code: CodeIssuerUnavailable, Check: CheckKeys,
		Message: fmt.Sprintf("the keys of issuer %s cannot be fetched, so no token of it can be verified", k.issuer),
		Hint:    fmt.Sprintf("retry in %s; if it lasts, the operator checks that kld reaches the issuer and trusts its certificate (SSL_CERT_FILE or the issuer CA file)", k.opts.MinFetchInterval),
		Err:     k.lastErr}
}

// fetch reads the discovery document (when cur's is RefreshEvery old) and
// the key set. It outlives the request that caused it, so that a client
// hanging up does not waste the fetch that other requests wait for.
func (k *issuerKeys) fetch(ctx context.Context, cur *keySnapshot) (*keySnapshot, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	now := time.Now()
	next := &keySnapshot{fetched: now}
	if cur != nil && now.Sub(cur.discovered) < k.opts.RefreshEvery {
		next.jwksURL, next.discovered = cur.jwksURL, cur.discovered
	} else {
		// go-oidc's discovery refuses a document whose issuer is not
		// spelled exactly as configured.
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.client), k.issuer)
		if err != nil {
			return nil, fmt.Errorf("discover issuer %s: %w", k.issuer, err)
		}
		var doc struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&doc); err != nil {
			return nil, fmt.Errorf("read discovery of %s: %w", k.issuer, err)
		}
		if u, err := url.Parse(doc.JWKSURL); err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("issuer %s names jwks_uri %q, not an HTTPS URL", k.issuer, doc.JWKSURL)
		}
		next.jwksURL, next.discovered = doc.JWKSURL, now
	}
	keys, err := k.fetchJWKS(ctx, next.jwksURL)
	if err != nil {
		return nil, err
	}
	next.keys = keys
	return next, nil
}

func (k *issuerKeys) fetchJWKS(ctx context.Context, jwksURL string) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch jwks of %s: %w", k.issuer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch jwks of %s: %s", k.issuer, resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, fmt.Errorf("decode jwks of %s: %w", k.issuer, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		// A key of a type or size we do not verify with is skipped, not
		// fatal: issuers publish keys for other uses beside.
		var key jose.JSONWebKey
		if key.UnmarshalJSON(raw) != nil || !usable(&key) {
			continue
		}
		if keys = append(keys, key); len(keys) == maxKeys {
			break
		}
	}
	if len(keys) == 0 && len(set.Keys) > 0 {
		return nil, errors.New("jwks of " + k.issuer + " holds no RS256 or ES256 signing key")
	}
	return keys, nil
}

func usable(key *jose.JSONWebKey) bool {
	if key.Use != "" && key.Use != "sig" || !key.IsPublic() {
		return false
	}
	switch pub := key.Key.(type) {
	case *rsa.PublicKey:
		return pub.N.BitLen() >= 2048 && (key.Algorithm == "" || key.Algorithm == "RS256")
	case *ecdsa.PublicKey:
		return pub.Curve == elliptic.P256() && (key.Algorithm == "" || key.Algorithm == "ES256")
	}
	return false
}

// find returns the keys that may have signed with alg under kid: the one
// of that id, or, for a token without kid, every key of alg's type.
func (s *keySnapshot) find(kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, key := range s.keys {
		if kid != "" && key.KeyID != kid {
			continue
		}
		switch key.Key.(type) {
		case *rsa.PublicKey:
			if alg == "RS256" {
				out = append(out, key)
			}
		case *ecdsa.PublicKey:
			if alg == "ES256" {
				out = append(out, key)
			}
		}
	}
	return out
}

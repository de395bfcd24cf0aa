package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"
)

// Claims returns the claims every ID token carries: iss of the issuer,
// aud, sub, and iat and nbf now with exp in 5 minutes (GitHub's tokens
// live about that long). Tests edit the map to make a bad token.
func (iss *Issuer) Claims(aud, sub string) map[string]any {
	now := time.Now().Unix()
	return map[string]any{"iss": iss.URL, "aud": aud, "sub": sub, "iat": now, "nbf": now, "exp": now + 300}
}

// GitHubClaims returns the claims of a GitHub Actions job of repo at ref,
// as GitHub spells them (sub "repo:ORG/NAME:ref:REF", run_id a string).
func (iss *Issuer) GitHubClaims(aud, repo, ref string) map[string]any {
	c := iss.Claims(aud, "repo:"+repo+":ref:"+ref)
	c["repository"] = repo
	c["ref"] = ref
	c["run_id"] = "7311"
	c["environment"] = "production"
	c["repository_owner"], _, _ = strings.Cut(repo, "/")
	return c
}

// Sign returns claims as a compact JWS signed by k, with k's id as kid.
func (iss *Issuer) Sign(t testing.TB, k *Key, claims map[string]any) string {
	t.Helper()
	return iss.SignWithHeader(t, k, map[string]any{"alg": k.Alg, "kid": k.ID, "typ": "JWT"}, claims)
}

// SignWithHeader signs claims with k under the header given as it is (a
// kid of another key, a lying alg…); the signature follows k's algorithm.
func (iss *Issuer) SignWithHeader(t testing.TB, k *Key, header, claims map[string]any) string {
	t.Helper()
	input := segment(t, header) + "." + segment(t, claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch key := k.signer.(type) {
	case *rsa.PrivateKey:
		sig, err = rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	case *ecdsa.PrivateKey:
		// JWS wants r||s, each 32 bytes, not ASN.1.
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, key, digest[:])
		if err == nil {
			sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
		}
	}
	if err != nil {
		t.Fatalf("sign a token: %v", err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Unsigned returns claims as an `alg: none` token, with an empty signature.
func Unsigned(t testing.TB, claims map[string]any) string {
	t.Helper()
	return segment(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + segment(t, claims) + "."
}

// SignHMAC returns claims signed with HS256 under secret: the attack of a
// verifier that takes a public key as an HMAC secret.
func SignHMAC(t testing.TB, kid string, secret []byte, claims map[string]any) string {
	t.Helper()
	input := segment(t, map[string]any{"alg": "HS256", "kid": kid, "typ": "JWT"}) + "." + segment(t, claims)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func segment(t testing.TB, v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode a token segment: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

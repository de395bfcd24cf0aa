package oidctest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// Issuer is a running OIDC issuer. Its methods are safe for concurrent use.
type Issuer struct {
	// URL is the issuer URL (https://127.0.0.1:PORT), as its tokens' iss
	// claim and its discovery document spell it.
	URL string

	srv    *httptest.Server
	caFile string

	mu        sync.Mutex
	published []*Key // in the JWKS, in order of creation
	down      bool

	discoveryFetches atomic.Int64
	jwksFetches      atomic.Int64
}

// Key is a signing key of the issuer. A withdrawn key still signs: that is
// how a test makes a token the issuer no longer vouches for.
type Key struct {
	ID     string
	Alg    string // "RS256" or "ES256"
	signer crypto.Signer
}

// Start runs an issuer with one published RS256 key and one ES256 key
// until the test ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", iss.serveDiscovery)
	mux.HandleFunc("GET /keys", iss.serveJWKS)
	iss.srv = httptest.NewUnstartedServer(mux)
	// A verifier that does not trust the CA is a test's point, not noise.
	iss.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	cert, ca := newCA(t)
	iss.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	iss.srv.StartTLS()
	t.Cleanup(iss.srv.Close)
	iss.URL = iss.srv.URL
	iss.caFile = filepath.Join(t.TempDir(), "issuer-ca.pem")
	if err := os.WriteFile(iss.caFile, ca, 0o600); err != nil {
		t.Fatalf("write the issuer's CA: %v", err)
	}
	iss.AddKey(t, "RS256")
	iss.AddKey(t, "ES256")
	return iss
}

// CAFile is the path of a PEM file holding the certificate authority of
// the issuer's TLS certificate.
func (iss *Issuer) CAFile() string { return iss.caFile }

// AddKey makes and publishes a new key of alg ("RS256" or "ES256"): what
// an issuer does when it rotates its keys.
func (iss *Issuer) AddKey(t testing.TB, alg string) *Key {
	t.Helper()
	var signer crypto.Signer
	var err error
	switch alg {
	case "RS256":
		signer, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("oidctest: no key of algorithm %q (RS256 or ES256)", alg)
	}
	if err != nil {
		t.Fatalf("generate a %s key: %v", alg, err)
	}
	iss.mu.Lock()
	defer iss.mu.Unlock()
	k := &Key{ID: fmt.Sprintf("key-%d-%s", len(iss.published)+1, alg), Alg: alg, signer: signer}
	iss.published = append(iss.published, k)
	return k
}

// Key returns the newest published key of alg, nil when there is none.
func (iss *Issuer) Key(alg string) *Key {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	for _, k := range slices.Backward(iss.published) {
		if k.Alg == alg {
			return k
		}
	}
	return nil
}

// Withdraw removes k from the JWKS: tokens it signs must stop working once
// a verifier refreshes its keys.
func (iss *Issuer) Withdraw(k *Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.published = slices.DeleteFunc(iss.published, func(p *Key) bool { return p == k })
}

// SetDown makes every request to the issuer answer 503 (down true) or be
// served again (false).
func (iss *Issuer) SetDown(down bool) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.down = down
}

// DiscoveryFetches is how many discovery documents the issuer has served.
func (iss *Issuer) DiscoveryFetches() int64 { return iss.discoveryFetches.Load() }

// JWKSFetches is how many key sets the issuer has served.
func (iss *Issuer) JWKSFetches() int64 { return iss.jwksFetches.Load() }

// Fetches is how many requests of either kind the issuer has served.
func (iss *Issuer) Fetches() int64 { return iss.DiscoveryFetches() + iss.JWKSFetches() }

func (iss *Issuer) isDown(w http.ResponseWriter) bool {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	if iss.down {
		http.Error(w, "issuer down for the test", http.StatusServiceUnavailable)
	}
	return iss.down
}

func (iss *Issuer) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	iss.discoveryFetches.Add(1)
	if iss.isDown(w) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"issuer":                                iss.URL,
		"jwks_uri":                              iss.URL + "/keys",
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "nbf", "repository", "ref", "run_id"},
	})
}

func (iss *Issuer) serveJWKS(w http.ResponseWriter, r *http.Request) {
	iss.jwksFetches.Add(1)
	if iss.isDown(w) {
		return
	}
	iss.mu.Lock()
	var set jose.JSONWebKeySet
	for _, k := range iss.published {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.signer.Public(), KeyID: k.ID, Algorithm: k.Alg, Use: "sig"})
	}
	iss.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// PublicKeyDER is k's public key in PKIX DER: the bytes an HS256 forgery
// uses as its secret, against a verifier that confuses the two.
func (k *Key) PublicKeyDER(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.signer.Public())
	if err != nil {
		t.Fatalf("marshal a public key: %v", err)
	}
	return der
}

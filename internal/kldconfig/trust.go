package kldconfig

import (
	"fmt"
	"time"

	"github.com/kilolock/kilolock/tenancy/trust"
)

// Trust are the flags of workload identity: CI jobs' OIDC ID tokens,
// verified against the trust policies kl trust manages.
type Trust struct {
	TrustIssuerCAFile string        `name:"trust-issuer-ca-file" env:"KL_TRUST_ISSUER_CA_FILE" type:"existingfile" placeholder:"FILE" help:"PEM certificates of the CA of a private OIDC issuer (a cluster's, for Kubernetes tokens), trusted besides the system's roots (which SSL_CERT_FILE and SSL_CERT_DIR also set) when kld fetches an issuer's keys. kld fetches only the issuers of trust policies, over HTTPS."`
	TrustKeyRefresh   time.Duration `name:"trust-key-refresh" default:"5m" env:"KL_TRUST_KEY_REFRESH" placeholder:"DURATION" help:"How old an issuer's cached keys may get before kld fetches them again, at most 5m: a key the issuer withdraws stops verifying within it. A token naming an unknown key id makes kld fetch at most once per 10s per issuer (or per this interval when shorter)."`
}

// Validate checks --trust-key-refresh; kong calls it as it parses the
// flags.
func (t *Trust) Validate() error {
	if t.TrustKeyRefresh <= 0 || t.TrustKeyRefresh > trust.DefaultRefreshEvery {
		return fmt.Errorf("--trust-key-refresh %s: give more than 0 and at most %s, so that a withdrawn key stops working", t.TrustKeyRefresh, trust.DefaultRefreshEvery)
	}
	return nil
}

// Verifier returns the verifier of ID tokens the flags ask for.
func (t *Trust) Verifier() (*trust.Verifier, error) {
	client, err := trust.NewHTTPClient(t.TrustIssuerCAFile)
	if err != nil {
		return nil, &ExitError{Code: ExitConfig, Err: fmt.Errorf("--trust-issuer-ca-file: %w", err)}
	}
	v, err := trust.NewVerifier(trust.Options{HTTPClient: client, RefreshEvery: t.TrustKeyRefresh})
	if err != nil {
		return nil, &ExitError{Code: ExitConfig, Err: err}
	}
	return v, nil
}

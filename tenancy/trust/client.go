package trust

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// fetchTimeout bounds one fetch of a discovery document or a key set.
const fetchTimeout = 10 * time.Second

// maxFetchBytes bounds the body of a discovery document or a key set
// (GitHub's JWKS is 2 KiB), so a broken issuer cannot fill kld's memory.
const maxFetchBytes = 1 << 20

// NewHTTPClient returns a client that fetches issuers as a user expects:
// it trusts the system's roots, which honor SSL_CERT_FILE and SSL_CERT_DIR,
// and, when caFile is not empty, the PEM certificates in caFile besides
// (a private issuer's CA, e.g. a cluster's for Kubernetes tokens). It
// follows redirects only to HTTPS and uses the environment's proxy.
func NewHTTPClient(caFile string) (*http.Client, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system roots: only caFile is trusted
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read issuer CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("issuer CA file %s holds no PEM certificate", caFile)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{
		Transport: tr,
		Timeout:   fetchTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s: issuers are fetched over HTTPS only", req.URL.Redacted())
			}
			if len(via) >= 5 {
				return errors.New("more than 5 redirects")
			}
			return nil
		},
	}, nil
}

// limitedClient returns c answering bodies of at most maxFetchBytes: a
// longer one fails to read, whoever reads it (go-oidc's discovery too).
func limitedClient(c *http.Client) *http.Client {
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = limitedTransport{base}
	if out.Timeout == 0 {
		out.Timeout = fetchTimeout
	}
	return &out
}

type limitedTransport struct{ base http.RoundTripper }

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxFetchBytes}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the limit: only the end of the body may follow.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("issuer answer is longer than %d bytes", maxFetchBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

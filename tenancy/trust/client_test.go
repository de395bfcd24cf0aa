package trust_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/oidctest"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// TestSSLCertFile gives the issuer's CA the way a user gives kld one, in
// SSL_CERT_FILE, to a fresh process (the system pool is read once per
// process): the default client trusts it, and trusts nothing else.
func TestSSLCertFile(t *testing.T) {
	if os.Getenv("KL_TRUST_CHILD") != "" {
		sslCertFileChild(t)
		return
	}
	iss := oidctest.Start(t)
	stranger := oidctest.Start(t) // another CA
	tok := iss.Sign(t, iss.Key("ES256"), iss.GitHubClaims(aud, "org/app", "refs/heads/main"))
	for _, c := range []struct{ caFile, want string }{{iss.CAFile(), "ok"}, {stranger.CAFile(), trust.CodeIssuerUnavailable}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSSLCertFile$", "-test.count=1")
		cmd.Env = append(os.Environ(), "KL_TRUST_CHILD=1", "SSL_CERT_FILE="+c.caFile, "KL_TRUST_ISSUER="+iss.URL, "KL_TRUST_TOKEN="+tok, "KL_TRUST_WANT="+c.want)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Errorf("SSL_CERT_FILE=%s, want %s: %v\n%s", c.caFile, c.want, err, out)
		}
	}
}

func sslCertFileChild(t *testing.T) {
	v, err := trust.NewVerifier(trust.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), os.Getenv("KL_TRUST_TOKEN"), []trust.Policy{policyOf(t, os.Getenv("KL_TRUST_ISSUER"))}, "")
	switch want := os.Getenv("KL_TRUST_WANT"); {
	case want == "ok" && err != nil:
		t.Fatalf("trusting the issuer's CA through SSL_CERT_FILE: %v", err)
	case want != "ok" && !errors.Is(err, trust.ErrIssuerUnavailable):
		t.Fatalf("trusting another CA: %v, want the issuer unavailable", err)
	}
}

func TestNewHTTPClientCAFile(t *testing.T) {
	if _, err := trust.NewHTTPClient("/nonexistent/ca.pem"); err == nil {
		t.Error("a missing CA file: want an error")
	}
	notPEM := t.TempDir() + "/ca.pem"
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	if _, err := trust.NewHTTPClient(notPEM); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a file without certificates: %v", err)
	}
}

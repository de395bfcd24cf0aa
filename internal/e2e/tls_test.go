package e2e_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestTLS serves HTTPS from kld itself (--tls-cert, --tls-key) and runs
// the real tofu against it: with the server's CA given to the http backend
// (client_ca_certificate_pem) it applies; without it, tofu refuses the
// unknown certificate.
func TestTLS(t *testing.T) {
	t.Parallel()
	tofu.Binary(t)
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for f, b := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := tofu.StartKLD(t, filepath.Join(dir, "kilolock.db"), "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("kld with --tls-cert serves %s", srv.URL)
	}
	backend := func(withCA bool) string {
		if !withCA {
			return srv.Backend("secure")
		}
		return srv.BackendWith("secure", fmt.Sprintf("    client_ca_certificate_pem = <<EOT\n%sEOT\n", certPEM))
	}
	wd := tofu.NewWorkdir(t, backend(true)+smallConfig("v1"))
	wd.Must("init", "-no-color")
	if out := wd.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete!") {
		t.Fatalf("apply over HTTPS:\n%s", out)
	}
	stranger := tofu.NewWorkdir(t, backend(false)+smallConfig("v1"))
	if _, stderr, code := stranger.Run("init", "-no-color"); code == 0 || !strings.Contains(stderr, "certificate") {
		t.Errorf("init without the CA: exit %d, want a refused certificate\n%s", code, stderr)
	}
}

// selfSigned returns a fresh self-signed certificate for 127.0.0.1 and its
// key, in PEM.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kld test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

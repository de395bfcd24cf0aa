package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock/internal/buildinfo"
	"github.com/kilolock/kilolock/internal/kldconfig"
)

// TestDefaultLockMode checks --default-lock-mode and KL_DEFAULT_LOCK_MODE:
// exclusive unless told, one of the two modes only.
func TestDefaultLockMode(t *testing.T) {
	parse := func(args ...string) (*cli, error) {
		var c cli
		parser, err := kong.New(&c, kong.Vars{"version": "test"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse(args)
		return &c, err
	}
	if c, err := parse(); err != nil || c.DefaultLockMode != "exclusive" {
		t.Errorf("default: %q, %v", c.DefaultLockMode, err)
	}
	if c, err := parse("--default-lock-mode=optimistic"); err != nil || c.DefaultLockMode != "optimistic" {
		t.Errorf("flag: %q, %v", c.DefaultLockMode, err)
	}
	if _, err := parse("--default-lock-mode=shared"); err == nil {
		t.Error("an unknown mode was accepted")
	}
	t.Setenv("KL_DEFAULT_LOCK_MODE", "optimistic")
	if c, err := parse(); err != nil || c.DefaultLockMode != "optimistic" {
		t.Errorf("KL_DEFAULT_LOCK_MODE: %q, %v", c.DefaultLockMode, err)
	}
}

// TestTLSFlags: a certificate without its key, or a pair that does not
// load, is a configuration error (exit 78) before any database is opened.
func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []cli{
		{Serving: kldconfig.Serving{TLSCert: cert}, Database: filepath.Join(dir, "never.db")},
		{Serving: kldconfig.Serving{TLSCert: cert, TLSKey: cert}, Database: filepath.Join(dir, "never.db")},
	} {
		err := run(&c, log.New(io.Discard), buildinfo.BuildInfo{})
		var ee *kldconfig.ExitError
		if !errors.As(err, &ee) || ee.Code != kldconfig.ExitConfig || !strings.Contains(err.Error(), "--tls-") {
			t.Errorf("run with --tls-cert %q --tls-key %q = %v; want a configuration error naming the flags", c.Serving.TLSCert, c.Serving.TLSKey, err)
		}
		if _, err := os.Stat(c.Database); !os.IsNotExist(err) {
			t.Errorf("a database was opened despite the TLS error (%v)", err)
		}
	}
}

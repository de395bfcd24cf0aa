package e2e_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/keyring"
)

// driftyProvider is kilolock/drifty, the provider of testdata/provider-drifty:
// its drifty_database keeps its real object in a file, so that the tests
// change real infrastructure without a cloud.
const driftyProvider = "registry.opentofu.org/kilolock/drifty"

var drifty struct {
	once   sync.Once
	mirror string
	err    error
}

// driftyCLIConfig builds the drifty provider (once per test binary, and
// kept between runs under the temporary directory, by a hash of its
// sources) into a provider mirror, and returns a CLI configuration that
// installs it from there and nothing from the network.
func driftyCLIConfig(t *testing.T) string {
	t.Helper()
	drifty.once.Do(func() { drifty.mirror, drifty.err = buildDrifty() })
	if drifty.err != nil {
		t.Fatalf("build the drifty provider: %v", drifty.err)
	}
	rc := filepath.Join(t.TempDir(), "tofurc")
	conf := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path    = %q\n    include = [%q]\n  }\n  direct {\n    exclude = [%q]\n  }\n}\n",
		drifty.mirror, driftyProvider, driftyProvider)
	if err := os.WriteFile(rc, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return rc
}

func buildDrifty() (string, error) {
	src, err := filepath.Abs(filepath.Join("testdata", "provider-drifty"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range []string{"main.go", "go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	mirror := filepath.Join(os.TempDir(), "kl-drifty-"+hex.EncodeToString(h.Sum(nil))[:16])
	bin := filepath.Join(mirror, driftyProvider, "0.1.0", runtime.GOOS+"_"+runtime.GOARCH, "terraform-provider-drifty_v0.1.0")
	if _, err := os.Stat(bin); err == nil {
		return mirror, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(tofu.CleanEnv("GOWORK=", "GOFLAGS=", "CGO_ENABLED="), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return mirror, os.Rename(tmp, bin)
}

// driftyConfig is a database whose password comes from a sensitive
// variable; the provider computes its url, which embeds the password
// without being marked sensitive, as a provider's connection string does.
func driftyConfig(backend, realFile string) string {
	return backend + fmt.Sprintf(`
terraform {
  required_providers {
    drifty = { source = "kilolock/drifty" }
  }
}

variable "db_password" {
  type      = string
  sensitive = true
}

resource "drifty_database" "main" {
  path     = %q
  host     = "db-1.internal"
  password = var.db_password
}
`, realFile)
}

// TestDriftKeepsNoSecret: with encryption at rest, a real database moved
// to another host is found by kl drift check (the real CLI's refresh-only
// plan); its url, which embeds the sensitive password unmarked, drifted
// too. The password is then nowhere in the clear: not in the database (the
// SQLite file, pg_dump), not in a backup kl backup writes, not in the
// resource_drift view nor kl drift list, which show the host that moved
// and the url masked.
func TestDriftKeepsNoSecret(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		dir := t.TempDir()
		keyFile := filepath.Join(dir, "keys")
		if err := os.WriteFile(keyFile, []byte(keyring.Generate()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		srv := tofu.StartKLD(t, databaseURL, "--encryption-key-file", keyFile)
		password := "pw-" + keyring.Generate()[:20]
		realFile := filepath.Join(dir, "database.json")
		wd := tofu.NewWorkdir(t, driftyConfig(srv.Backend("db"), realFile))
		wd.Setenv("TF_CLI_CONFIG_FILE", driftyCLIConfig(t))
		wd.Setenv("TF_VAR_db_password", password)
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		if doc := getState(t, srv, "db"); !bytes.Contains(doc, []byte("pg://admin:"+password+"@db-1.internal")) {
			t.Fatalf("the state lacks the url holding the password: the test checks nothing\n%s", doc)
		}

		// The real database moves; its url follows.
		if err := os.WriteFile(realFile, fmt.Appendf(nil, `{"host":"db-2.internal","password":%q}`, password), 0o600); err != nil {
			t.Fatal(err)
		}
		out := mustKLIn(t, wd, "--server", srv.URL, "drift", "check", wd.Dir)
		if !strings.Contains(out, "1 instance drifted") || !strings.Contains(out, "drifty_database.main") {
			t.Fatalf("kl drift check:\n%s", out)
		}
		list := mustKL(t, "--server", srv.URL, "drift", "list", "db", "--json")
		view := mustKL(t, "--server", srv.URL, "query", "--json", "SELECT address, kind, changes FROM resource_drift WHERE state = 'db'")
		for what, got := range map[string]string{"kl drift list": list, "resource_drift": view} {
			if !strings.Contains(got, "db-2.internal") || !strings.Contains(got, "url") || !strings.Contains(got, "(sensitive)") {
				t.Errorf("%s shows no drifted host and masked url:\n%s", what, got)
			}
		}

		backup := filepath.Join(dir, "backup.json.gz")
		mustKL(t, "--database", databaseURL, "--encryption-key-file", keyFile, "backup", "-o", backup)
		zr, err := gzip.NewReader(bytes.NewReader(readFile(t, backup)))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		dump := dumpDatabase(t, databaseURL)
		if !bytes.Contains(dump, []byte("db-2.internal")) || !bytes.Contains(plain, []byte("db-2.internal")) {
			t.Fatalf("the database dump (%d bytes) or the backup (%d bytes) lacks the drifted host: not of this store", len(dump), len(plain))
		}
		for what, b := range map[string][]byte{"the database dump": dump, "the backup": plain, "kl drift check": []byte(out), "kl drift list": []byte(list), "resource_drift": []byte(view)} {
			if bytes.Contains(b, []byte(password)) {
				t.Errorf("%s (%d bytes) holds the password after a drift check", what, len(b))
			}
		}
	})
}

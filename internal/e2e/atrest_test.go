package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/internal/tofu"
	"github.com/kilolock/kilolock/keyring"
	"github.com/kilolock/kilolock/store/storetest"
)

// atRestConfig applies two secrets the way Terraform marks them: a
// terraform_data input from a sensitive variable (its path is in
// sensitive_attributes) and a sensitive output of another one.
func atRestConfig(backend, rev string) string {
	return backend + `
variable "db_password" {
  type      = string
  sensitive = true
}

variable "api_token" {
  type      = string
  sensitive = true
}

resource "terraform_data" "db" {
  input = {
    host     = "db-` + rev + `.internal"
    password = var.db_password
  }
}

resource "terraform_data" "plain" {
  input = "` + rev + `"
}

output "token" {
  value     = var.api_token
  sensitive = true
}
`
}

// TestEncryptionAtRest runs kld with --encryption-key-file: tofu applies a
// sensitive attribute and a sensitive output; GET answers byte for byte
// what tofu posted (seen through a proxy) and tofu plans no change; a dump
// of the database (the SQLite file, pg_dump) holds none of either
// secret's bytes, while the views show the rest with the secrets masked;
// kld without the key, or with another, or with an empty key file,
// refuses to start (exit 78, naming the key and the flag); kl keys rotate
// re-wraps the data keys of 250 states to a new key, showing its
// progress, after which the old key can go.
func TestEncryptionAtRest(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		dir := t.TempDir()
		oldKey, newKey := keyring.Generate(), keyring.Generate()
		keyFile := func(name string, keys ...string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		oldFile, bothFile, newFile := keyFile("old", oldKey), keyFile("both", newKey, oldKey), keyFile("new", newKey)
		oldRing, _ := keyring.Parse([]byte(oldKey))
		newRing, _ := keyring.Parse([]byte(newKey))

		srv := tofu.StartKLD(t, databaseURL, "--encryption-key-file", oldFile)
		secret := "pw-" + keyring.Generate()[:20]
		token := "tok-" + keyring.Generate()[:20]
		rec, backend := recordedBackend(t, srv, "app")
		wd := tofu.NewWorkdir(t, atRestConfig(backend, "v1"))
		wd.Setenv("TF_VAR_db_password", secret)
		wd.Setenv("TF_VAR_api_token", token)
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		wd.WriteFile("main.tf", atRestConfig(backend, "v2"))
		wd.Must("apply", "-auto-approve", "-no-color")

		posted := rec.last(t)
		if got := getState(t, srv, "app"); !bytes.Equal(got, posted) || !bytes.Contains(got, []byte(secret)) || !bytes.Contains(got, []byte(token)) {
			t.Fatalf("GET does not answer what tofu posted, or lacks the secrets %s, %s:\n%s\nposted:\n%s", secret, token, got, posted)
		}
		if !bytes.Contains(posted, []byte(`"sensitive_attributes":[[`)) || !bytes.Contains(posted, []byte(`"sensitive":true`)) {
			t.Fatalf("the state marks nothing sensitive: the test applies no secret:\n%s", posted)
		}
		wd.Must("plan", "-detailed-exitcode", "-no-color")
		// More states holding a secret, each with its data key: what kl
		// keys rotate shows its progress on.
		var otherSecrets []string
		for i := range rotatedStates - 1 {
			otherSecrets = append(otherSecrets, fmt.Sprintf("secret-%s-%d", keyring.Generate()[:8], i))
			doc := fmt.Appendf(nil, `{"version":4,"terraform_version":"1.10.10","serial":1,"lineage":"l-%d","outputs":{"pw":{"value":%q,"type":"string","sensitive":true}},"resources":[]}`, i, otherSecrets[i])
			if code, body := request(t, http.MethodPost, srv.StateURL(fmt.Sprintf("other-%d", i)), doc); code != http.StatusOK {
				t.Fatalf("POST other-%d: %d %s", i, code, body)
			}
		}

		// What a database dump shows: no secret, the rest queryable.
		dump := dumpDatabase(t, databaseURL)
		for what, b := range map[string]string{"the sensitive attribute": secret, "the sensitive output": token, "another state's sensitive output": otherSecrets[len(otherSecrets)-1]} {
			if bytes.Contains(dump, []byte(b)) {
				t.Errorf("the database dump (%d bytes) holds %s", len(dump), what)
			}
		}
		if !bytes.Contains(dump, []byte("db-v2.internal")) {
			t.Fatalf("the database dump (%d bytes) lacks the host, which is not secret: not a dump of this database", len(dump))
		}
		// (raw_json holds the object where PostgreSQL's jsonb cannot, or
		// where its check errs on the side of no: an id with "e" and five
		// digits in it.)
		out := mustKL(t, "--server", srv.URL, "query", "--json", `SELECT attributes, raw_json FROM resources WHERE state = 'app' AND name = 'db'`)
		if !strings.Contains(out, "db-v2.internal") || !strings.Contains(out, "(sensitive)") || strings.Contains(out, secret) {
			t.Fatalf("kl query of the resources view = %s; want the host, the password masked", out)
		}
		out = mustKL(t, "--server", srv.URL, "query", "--json", `SELECT name, sensitive, value, raw_json FROM outputs WHERE state = 'app'`)
		if !strings.Contains(out, "(sensitive)") || strings.Contains(out, token) {
			t.Fatalf("kl query of the outputs view = %s; want the token masked", out)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}

		// Without the key, or with another one, kld does not start: it
		// names the key the database needs and the flag to give it with.
		// A key file without a key is refused too, whatever the database.
		for _, tc := range []struct {
			name string
			args []string
			want []string
		}{
			{"no key", nil, []string{"no encryption key is configured", oldRing.Active()}},
			{"another key", []string{"--encryption-key-file", newFile}, []string{"do not include", oldRing.Active(), newRing.Active()}},
			{"an empty key file", []string{"--encryption-key-file", keyFile("empty")}, []string{"no key"}},
		} {
			code, log := runKLD(t, databaseURL, tc.args...)
			want := append(tc.want, "encryption-key-file")
			for _, w := range want {
				if code != 78 || !strings.Contains(log, w) {
					t.Errorf("kld with %s: exit %d, want 78 and a log saying %q; log:\n%s", tc.name, code, w, log)
					break
				}
			}
		}

		// Rotation: the new key first, the old one to read; kl keys
		// rotate re-wraps; then the new key alone serves it all.
		srv = tofu.StartKLD(t, databaseURL, "--encryption-key-file", bothFile)
		rotated := mustKL(t, "--server", srv.URL, "keys", "rotate")
		progress := fmt.Sprintf("rotating to key %s: 0 of %d data keys re-wrapped, %[2]d left", newRing.Active(), rotatedStates)
		done := fmt.Sprintf("done: %d data keys re-wrapped to key %s", rotatedStates, newRing.Active())
		if !strings.Contains(rotated, progress) || !strings.Contains(rotated, done) {
			t.Fatalf("kl keys rotate said:\n%s\nwant %q, then %q", rotated, progress, done)
		}
		var status struct {
			Keys []struct {
				KeyID  string `json:"key_id"`
				States int64  `json:"states"`
				Active bool   `json:"active"`
			} `json:"keys"`
		}
		if err := json.Unmarshal([]byte(mustKL(t, "--server", srv.URL, "keys", "status", "--json")), &status); err != nil {
			t.Fatal(err)
		}
		if len(status.Keys) != 2 || status.Keys[0].KeyID != newRing.Active() || status.Keys[0].States != rotatedStates || status.Keys[1].States != 0 {
			t.Fatalf("kl keys status after rotation = %+v; want the new key wrapping the %d states' data keys, the old one nothing", status.Keys, rotatedStates)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}
		srv = tofu.StartKLD(t, databaseURL, "--encryption-key-file", newFile)
		wd.WriteFile("main.tf", atRestConfig(srv.Backend("app"), "v2"))
		wd.Must("init", "-reconfigure", "-no-color")
		wd.Must("plan", "-detailed-exitcode", "-no-color")
		if got := getState(t, srv, "app"); !bytes.Equal(got, posted) {
			t.Fatalf("with the new key alone, GET is not what tofu posted:\n%s", got)
		}
		if err := srv.Stop(); err != nil {
			t.Fatal(err)
		}

		// Its backup holds no secret; kl restore needs the key to load it
		// (into SQLite, from either store), and kld on the restored file
		// answers what tofu posted.
		backup := filepath.Join(dir, "backup.json.gz")
		mustKL(t, "--database", databaseURL, "--encryption-key-file", newFile, "backup", "-o", backup)
		file, err := os.ReadFile(backup)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := gunzip(file)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(plain, []byte(secret)) || bytes.Contains(plain, []byte(token)) || !bytes.Contains(plain, []byte("db-v2.internal")) {
			t.Fatalf("the backup (%d bytes) holds a secret, or not the host", len(plain))
		}
		restored := filepath.Join(dir, "restored.db")
		if _, stderr, code := kl(t, "--database", restored, "restore", backup); code == 0 || !strings.Contains(stderr, "encryption-key-file") {
			t.Fatalf("kl restore of an encrypted store's backup without its key: exit %d, %s", code, stderr)
		}
		mustKL(t, "--database", restored, "--encryption-key-file", newFile, "restore", backup)
		srv = tofu.StartKLD(t, restored, "--encryption-key-file", newFile)
		if got := getState(t, srv, "app"); !bytes.Equal(got, posted) {
			t.Fatalf("restored from the backup, GET is not what tofu posted:\n%s", got)
		}
	})
}

// rotatedStates is how many states hold a secret when TestEncryptionAtRest
// rotates keys: more than one batch of RotateKeys (100).
const rotatedStates = 250

// runKLD runs kld on databaseURL expecting it to stop by itself, and
// returns its exit code and what it logged.
func runKLD(t *testing.T, databaseURL string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tofu.BuildKLD(t), append([]string{"--listen", "127.0.0.1:0", "--database", databaseURL}, args...)...)
	cmd.Env = tofu.CleanEnv("KL_")
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("kld: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// dumpDatabase is what someone who reads the database without kld sees:
// the SQLite file and its WAL, or pg_dump's dump.
func dumpDatabase(t *testing.T, databaseURL string) []byte {
	t.Helper()
	if !strings.HasPrefix(databaseURL, "postgres") {
		return storetest.FileDump(t, databaseURL)
	}
	out, err := exec.Command(testpg.Tool(t, "pg_dump"), "--dbname", databaseURL).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return out
}

// TestKeyFileMode: kld refuses a key file others may read (exit 78, the
// mode and the chmod to run in its log), as ssh refuses such a private
// key; a key file its group may read serves, with a warning; and kl
// refuses it for --database too.
func TestKeyFileMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte(keyring.Generate()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	database := filepath.Join(dir, "kilolock.db")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	code, log := runKLD(t, database, "--encryption-key-file", file)
	for _, want := range []string{"mode 0644", "any user", "chmod 600 " + file} {
		if code != 78 || !strings.Contains(log, want) {
			t.Errorf("kld with a 0644 key file: exit %d, want 78 and a log saying %q; log:\n%s", code, want, log)
		}
	}
	if _, stderr, code := kl(t, "--database", database, "--encryption-key-file", file, "states"); code == 0 || !strings.Contains(stderr, "chmod 600 "+file) {
		t.Errorf("kl with a 0644 key file: exit %d, want a refusal naming the chmod; stderr:\n%s", code, stderr)
	}
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	srv := tofu.StartKLD(t, database, "--encryption-key-file", file)
	if !strings.Contains(srv.Log(), "its group can read it") {
		t.Errorf("kld with a 0640 key file did not warn; log:\n%s", srv.Log())
	}
}

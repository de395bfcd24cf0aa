package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// encryptionConfig turns on OpenTofu's client-side state encryption with
// a passphrase: no key provider needs a download or a cloud.
const encryptionConfig = `
terraform {
  encryption {
    key_provider "pbkdf2" "team" {
      passphrase = "correct horse battery staple"
    }
    method "aes_gcm" "team" {
      keys = key_provider.pbkdf2.team
    }
    state {
      method = method.aes_gcm.team
    }
  }
}
`

// TestClientSideEncryption applies a configuration whose state OpenTofu
// encrypts: kld keeps the envelope OpenTofu writes as an opaque version,
// byte for byte, tofu reads it back (plan without changes, state list),
// each further apply is a new version with the serial the envelope
// carries, and kl shows the key provider. With
// --require-client-encryption (set on the database, kld running), a
// plaintext POST is refused and the history stays as it was.
func TestClientSideEncryption(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("secret")+encryptionConfig+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")

		stored := getState(t, srv, "secret")
		var envelope map[string]json.RawMessage
		if err := json.Unmarshal(stored, &envelope); err != nil {
			t.Fatalf("the stored state is not JSON: %v\n%.300s", err, stored)
		}
		var data []byte
		if err := json.Unmarshal(envelope["encrypted_data"], &data); err != nil || len(data) == 0 {
			t.Errorf("encrypted_data is not base64 bytes: %v", err)
		}
		for key := range envelope {
			switch key {
			case "serial", "lineage", "meta", "encrypted_data", "encryption_version":
			default:
				t.Errorf("the envelope tofu wrote has a key %q: kld's idea of its shape is wrong", key)
			}
		}
		if f := versionFormats(t, srv, "secret"); len(f) != 1 || f[0] != "opaque" {
			t.Errorf("version formats = %q, want one opaque version", f)
		}

		wd.Must("plan", "-detailed-exitcode", "-no-color")
		if got := stateList(t, wd); !equalLists(got, smallAddresses) {
			t.Errorf("state list = %q, want %q", got, smallAddresses)
		}
		wd.WriteFile("main.tf", srv.Backend("secret")+encryptionConfig+smallConfig("v2"))
		wd.Must("apply", "-auto-approve", "-no-color")
		if f := versionFormats(t, srv, "secret"); len(f) != 2 || f[0] != "opaque" || f[1] != "opaque" {
			t.Errorf("version formats after two applies = %q, want two opaque versions", f)
		}
		if again := getState(t, srv, "secret"); string(again) == string(stored) {
			t.Error("the second apply did not change the stored envelope")
		}
		wd.Must("plan", "-detailed-exitcode", "-no-color")
		lineage := envelopeLineage(t, getState(t, srv, "secret"))
		for _, target := range [][]string{{"--server", srv.URL}, {"--database", databaseURL}} {
			if got := serialsOf(t, target, "secret"); !slices.Equal(got, []uint64{2, 1}) {
				t.Errorf("kl %s history: serials %v, want [2 1]", target[0], got)
			}
			status := mustKL(t, append(target, "status", "secret")...)
			for _, want := range []string{"serial 2", lineage, "client-side (OpenTofu v0), key providers pbkdf2.team"} {
				if !strings.Contains(status, want) {
					t.Errorf("kl %s status lacks %q:\n%s", target[0], want, status)
				}
			}
		}

		mustKL(t, "--database", databaseURL, "state", "config", "secret", "--require-client-encryption")
		states := mustKL(t, "--server", srv.URL, "states")
		if !strings.Contains(states, "pbkdf2.team, required") {
			t.Errorf("kl states does not show the key provider and the requirement:\n%s", states)
		}
		plain := fmt.Appendf(nil, `{"version":4,"terraform_version":"1.10.10","serial":3,"lineage":%q,"outputs":{},"resources":[],"check_results":null}`, lineage)
		code, body := request(t, http.MethodPost, srv.StateURL("secret"), plain)
		var refusal struct{ Error, Hint string }
		if err := json.Unmarshal(body, &refusal); code != http.StatusConflict || err != nil || refusal.Error != "client_encryption_required" || !strings.Contains(refusal.Hint, "encryption") {
			t.Errorf("plaintext POST under --require-client-encryption = %d %s", code, body)
		}
		if got := serialsOf(t, []string{"--server", srv.URL}, "secret"); !slices.Equal(got, []uint64{2, 1}) {
			t.Errorf("after the refused POST: serials %v, want [2 1]", got)
		}
		if conflicts := mustKL(t, "--server", srv.URL, "conflicts", "secret"); !strings.Contains(conflicts, "client_encryption_required") {
			t.Errorf("kl conflicts does not show the refusal:\n%s", conflicts)
		}
		wd.WriteFile("main.tf", srv.Backend("secret")+encryptionConfig+smallConfig("v3"))
		wd.Must("apply", "-auto-approve", "-no-color")
		if got := serialsOf(t, []string{"--server", srv.URL}, "secret"); !slices.Equal(got, []uint64{3, 2, 1}) {
			t.Errorf("an encrypted apply under the requirement: serials %v, want [3 2 1]", got)
		}
	})
}

// TestClientSideEncryptionMigration moves a state from plaintext to
// encrypted and back in place with OpenTofu's fallback block, the key
// given in TF_ENCRYPTION: lineage kept, the serial up one each time, plan
// clean after each. Going back while the state requires client-side
// encryption is refused (tofu fails, nothing stored) until the requirement
// is lifted.
func TestClientSideEncryptionMigration(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		server := []string{"--server", srv.URL}
		wd := tofu.NewWorkdir(t, srv.Backend("app")+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")
		lineage := parseState(t, getState(t, srv, "app")).Lineage

		const keys = `key_provider "pbkdf2" "team" { passphrase = "a passphrase kept in the environment" }
method "aes_gcm" "team" { keys = key_provider.pbkdf2.team }
method "unencrypted" "plain" {}
`
		wd.Setenv("TF_ENCRYPTION", keys+`state {
  method = method.aes_gcm.team
  fallback { method = method.unencrypted.plain }
}`)
		wd.Must("apply", "-auto-approve", "-no-color")
		if f := versionFormats(t, srv, "app"); len(f) != 2 || f[0] != "opaque" || f[1] == "opaque" {
			t.Fatalf("formats after encrypting = %q, want opaque over plaintext", f)
		}
		if got := envelopeLineage(t, getState(t, srv, "app")); got != lineage {
			t.Errorf("the encrypted state's lineage is %q, want %q", got, lineage)
		}
		wd.Must("plan", "-detailed-exitcode", "-no-color")
		if got := serialsOf(t, server, "app"); !slices.Equal(got, []uint64{2, 1}) {
			t.Errorf("serials after encrypting = %v, want [2 1]", got)
		}

		back := keys + `state {
  method = method.unencrypted.plain
  fallback { method = method.aes_gcm.team }
}`
		mustKL(t, "--server", srv.URL, "state", "config", "app", "--require-client-encryption")
		refused := tofu.NewWorkdir(t, srv.Backend("app")+smallConfig("v1"))
		refused.Setenv("TF_ENCRYPTION", back)
		refused.Must("init", "-no-color")
		if _, stderr, code := refused.Run("apply", "-auto-approve", "-no-color"); code == 0 || !strings.Contains(stderr, "409") {
			t.Errorf("going back to plaintext under the requirement: exit %d\n%s", code, stderr)
		}
		if got := serialsOf(t, server, "app"); !slices.Equal(got, []uint64{2, 1}) {
			t.Errorf("serials after the refused write = %v, want [2 1]", got)
		}
		mustKL(t, "--server", srv.URL, "state", "config", "app", "--no-require-client-encryption")

		wd.Setenv("TF_ENCRYPTION", back)
		wd.Must("apply", "-auto-approve", "-no-color")
		if f := versionFormats(t, srv, "app"); len(f) != 3 || f[0] == "opaque" {
			t.Fatalf("formats after decrypting = %q, want plaintext on top", f)
		}
		if st := parseState(t, getState(t, srv, "app")); st.Lineage != lineage || st.Serial != 3 || st.instances() != len(smallAddresses) {
			t.Errorf("the state back in plaintext: lineage %s serial %d, %d instances", st.Lineage, st.Serial, st.instances())
		}
		wd.Must("plan", "-detailed-exitcode", "-no-color")
		if got := stateList(t, wd); !equalLists(got, smallAddresses) {
			t.Errorf("state list = %q, want %q", got, smallAddresses)
		}
	})
}

// serialsOf lists a state's versions' serials, newest first, as kl
// history --json shows them on target (--server URL or --database URL).
func serialsOf(t *testing.T, target []string, name string) []uint64 {
	t.Helper()
	out := mustKL(t, append(target, "history", name, "--json")...)
	var h struct {
		Versions []historyVersion `json:"versions"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("kl history --json: %v\n%s", err, out)
	}
	var serials []uint64
	for _, v := range h.Versions {
		serials = append(serials, v.Serial)
	}
	return serials
}

// envelopeLineage is the lineage an encrypted state carries in the clear.
func envelopeLineage(t *testing.T, doc []byte) string {
	t.Helper()
	var env struct {
		Lineage string `json:"lineage"`
	}
	if err := json.Unmarshal(doc, &env); err != nil || env.Lineage == "" {
		t.Fatalf("no lineage in the envelope: %v\n%.300s", err, doc)
	}
	return env.Lineage
}

// versionFormats returns the format of each version of a state, newest
// first.
func versionFormats(t *testing.T, srv *tofu.Server, name string) []string {
	t.Helper()
	code, body := request(t, http.MethodGet, srv.URL+"/v1/api/states/"+name+"/versions", nil)
	var answer struct {
		Versions []struct {
			Format string `json:"format"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(body, &answer); code != http.StatusOK || err != nil {
		t.Fatalf("GET versions of %s = %d %s (%v)", name, code, body, err)
	}
	var formats []string
	for _, v := range answer.Versions {
		formats = append(formats, v.Format)
	}
	return formats
}

// TestEnvironmentRequiresClientEncryption: the operator makes every state
// of an environment require client-side encryption (kl env config, through
// the control API): a tenant's plaintext apply fails with tofu's "HTTP
// error: 409" and stores nothing, the same apply encrypted goes in. Both
// stores.
func TestEnvironmentRequiresClientEncryption(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		out := mustKL(t, "--server", c.srv.URL, "--token", operatorSecret, "env", "config", "--workspace", c.ws, c.env, "--require-client-encryption")
		if !strings.Contains(out, "client-side encryption required") {
			t.Errorf("kl env config:\n%s", out)
		}
		if envs := mustKL(t, "--server", c.srv.URL, "--token", operatorSecret, "env", "list", "--workspace", c.ws); !strings.Contains(envs, "required") {
			t.Errorf("kl env list does not show the requirement:\n%s", envs)
		}
		d := c.withEnv(t, c.path("app"), c.ws, c.auto.Secret)
		d.Must("init", "-no-color")
		if _, stderr, code := d.Run("apply", "-auto-approve", "-no-color"); code == 0 || !strings.Contains(stderr, "HTTP error: 409") {
			t.Fatalf("a plaintext apply in the environment: exit %d\n%s", code, stderr)
		}
		if code, body := c.stateRequest(t, http.MethodGet, c.path("app"), c.ws, c.auto.Secret, "", nil); code == http.StatusOK && len(body) > 0 {
			t.Errorf("the refused apply stored a state: %s", body)
		}
		d.Setenv("TF_ENCRYPTION", `key_provider "pbkdf2" "tenant" { passphrase = "the tenant's own passphrase" }
method "aes_gcm" "tenant" { keys = key_provider.pbkdf2.tenant }
state { method = method.aes_gcm.tenant }`)
		d.Must("apply", "-auto-approve", "-no-color")
		d.Must("plan", "-detailed-exitcode", "-no-color")
		code, body := c.stateRequest(t, http.MethodGet, c.path("app"), c.ws, c.auto.Secret, "", nil)
		if code != http.StatusOK || envelopeLineage(t, body) == "" || !strings.Contains(string(body), `"key_provider.pbkdf2.tenant"`) {
			t.Errorf("GET after the encrypted apply: %d %.200s", code, body)
		}
	})
}

package e2e_test

import (
	"encoding/json"
	"net/http"
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
// and each further apply is a new version.
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
	})
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

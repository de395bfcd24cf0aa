package klcli_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/internal/klcli"
)

// TestClientSideEncryptionShown: kl status and kl states say that a state
// is client-side encrypted and by which key providers (type and name, never
// the meta's material), kl history that its version is, and kl state config --require-client-encryption
// makes the state refuse plaintext writes, on every backend.
func TestClientSideEncryptionShown(t *testing.T) {
	ctx := context.Background()
	const salt = "eyJzYWx0IjoiU0VDUkVUX1NBTFQifQ==" // {"salt":"SECRET_SALT"}
	blob := []byte(`{"serial":1,"lineage":"enc-lineage","meta":{"key_provider.pbkdf2.team":"` + salt + `","ops-kms\u001b]0;x":"e30="},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`)
	forEachBackend(t, func(t *testing.T, h *harness) {
		if _, err := h.engine.Write(ctx, "enc", blob, kilolock.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "enc", client.StateConfig{RequireClientEncryption: ptr(true)})
		})
		if err != nil || !strings.Contains(out, "client-side encryption required") {
			t.Fatalf("state config = %q, %v", out, err)
		}
		status, err := h.run(t, false, func(c *klcli.CLI) error { return c.Status(ctx, "enc") })
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"serial 1", "encryption:", "client-side (OpenTofu v0), key providers pbkdf2.team, alias ops-kms\uFFFD]0;x", "required by the state"} {
			if !strings.Contains(status, want) {
				t.Errorf("kl status lacks %q:\n%s", want, status)
			}
		}
		history, err := h.run(t, false, func(c *klcli.CLI) error { return c.History(ctx, "enc", kilolock.HistoryOptions{}) })
		if err != nil || !strings.Contains(history, "encrypted") || strings.Contains(history, "+0 ~0") {
			t.Errorf("kl history = %v\n%s", err, history)
		}
		states, err := h.run(t, false, func(c *klcli.CLI) error { return c.States(ctx) })
		if err != nil || !strings.Contains(states, "pbkdf2.team, alias ops-kms\uFFFD]0;x, required") {
			t.Errorf("kl states = %v\n%s", err, states)
		}
		js, err := h.run(t, true, func(c *klcli.CLI) error { return c.Status(ctx, "enc") })
		if err != nil {
			t.Fatal(err)
		}
		var s kilolock.Status
		if err := json.Unmarshal([]byte(js), &s); err != nil || s.ClientEncryption == nil || len(s.ClientEncryption.KeyProviders) != 2 ||
			s.ClientEncryption.KeyProviders[0] != (kilolock.KeyProvider{Type: "pbkdf2", Name: "team"}) || !s.RequireClientEncryption {
			t.Errorf("kl status --json = %+v, %v\n%s", s.ClientEncryption, err, js)
		}
		for _, out := range []string{status, states, js} {
			if strings.Contains(out, "SECRET_SALT") || strings.Contains(out, salt) || strings.Contains(out, "\x1b") {
				t.Errorf("kl shows the meta's material or a raw escape:\n%s", out)
			}
		}

		plain := seedDoc(t, "prod-1")
		_, err = h.engine.Write(ctx, "enc", plain, kilolock.WriteOptions{})
		var ce *kilolock.ConflictError
		if !errors.As(err, &ce) || ce.Reason != kilolock.ReasonClientEncryptionRequired {
			t.Errorf("plaintext write = %v, want client_encryption_required", err)
		}
		if _, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.ConfigureState(ctx, "enc", client.StateConfig{RequireClientEncryption: ptr(false)})
		}); err != nil {
			t.Fatal(err)
		}
		if st, err := h.backend.API().Status(ctx, "enc"); err != nil || st.RequireClientEncryption {
			t.Errorf("after --require-client-encryption=false: %+v, %v", st, err)
		}
	})
}

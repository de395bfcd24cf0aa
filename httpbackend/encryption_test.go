package httpbackend

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
)

// TestEncryptedWritesOverHTTP: the answers tofu (and any other client)
// gets for client-side encrypted states, in the project's error JSON: a
// second optimistic holder's envelope is a 409 conflict naming the winner
// (its body cannot be merged), and a plaintext POST to a state that
// requires client-side encryption, set through the config API, is a 409
// client_encryption_required; nothing is stored either time.
func TestEncryptedWritesOverHTTP(t *testing.T) {
	envelope := func(serial, data string) []byte {
		return []byte(`{"serial":` + serial + `,"lineage":"lin","meta":{"key_provider.pbkdf2.team":"e30="},"encrypted_data":"` + data + `","encryption_version":"v0"}`)
	}
	env := newEnv(t, "", Options{})
	env.optimistic("vault")
	env.post("vault", "", envelope("1", "YmFzZQ=="))
	alice, bob := lockInfo("alice-1", "alice"), lockInfo("bob-1", "bob")
	env.lock("vault", alice)
	env.lock("vault", bob)
	env.post("vault", alice.ID, envelope("2", "YWxpY2U="))
	w := env.do("POST", "/v1/states/vault?ID="+bob.ID, envelope("2", "Ym9i"))
	e := errorOf(t, w)
	if w.Code != http.StatusConflict || e.Error != kilolock.ReasonWriteConflict || e.Winner == nil || e.Winner.LockID != alice.ID ||
		!strings.Contains(e.Message, "cannot be merged") || !strings.Contains(e.Hint, "--exclusive-locks") {
		t.Errorf("the second holder's envelope = %d %s", w.Code, w.Body)
	}
	if got := env.do("GET", "/v1/states/vault", nil).Body.String(); got != string(envelope("2", "YWxpY2U=")) {
		t.Errorf("GET after the refusal = %s, want alice's envelope", got)
	}

	w = env.do("POST", "/v1/api/states/vault/config", []byte(`{"require_client_encryption": true}`))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"require_client_encryption":true`) {
		t.Fatalf("config: %d %s", w.Code, w.Body)
	}
	w = env.do("POST", "/v1/states/vault?ID="+alice.ID, stateDoc(t, "lin", 3, map[string]string{"web": "a"}))
	if e := errorOf(t, w); w.Code != http.StatusConflict || e.Error != kilolock.ReasonClientEncryptionRequired || !strings.Contains(e.Hint, "fallback") {
		t.Errorf("plaintext POST = %d %s", w.Code, w.Body)
	}
	if h, err := env.engine.History(t.Context(), "vault", kilolock.HistoryOptions{}); err != nil || len(h) != 2 || h[0].Serial != 2 {
		t.Errorf("history = %+v, %v; want alice's version on top of the first", h, err)
	}
	env.post("vault", alice.ID, envelope("3", "YWxpY2UgYWdhaW4="))
}

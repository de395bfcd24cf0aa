package trust_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/oidctest"
	"github.com/kilolock/kilolock/tenancy/trust"
)

// FuzzVerify feeds the Verifier what any client can send as a password:
// it never panics, answers every refusal as a *trust.Error with a code,
// message and hint, and accepts only the genuine tokens it was seeded with.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f, trust.Options{})
	genuine := map[string]bool{}
	for _, alg := range []string{"RS256", "ES256"} {
		tok := fx.token(f, alg, nil)
		genuine[signed(tok)] = true
		f.Add(tok)
	}
	f.Add(oidctest.Unsigned(f, fx.iss.GitHubClaims(aud, "org/app", "refs/heads/main")))
	f.Add(fx.token(f, "RS256", func(c map[string]any) { c["repository"] = 7 }))
	f.Add(fx.token(f, "RS256", func(c map[string]any) { c["aud"] = map[string]any{"x": 1} }))
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.")
	f.Add("klt_" + strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, token string) {
		id, err := fx.verify(t, token)
		if err == nil {
			// Only the signed content of a seeded genuine token verifies
			// (a signature's last base64 character has slack bits).
			if !genuine[signed(token)] {
				t.Fatalf("accepted a token other than the seeded one: %q (%v)", token, id)
			}
			return
		}
		var te *trust.Error
		if !errors.As(err, &te) || te.Code == "" || te.Message == "" || te.Hint == "" {
			t.Fatalf("refusal %v: want a *trust.Error with code, message and hint", err)
		}
	})
}

// signed is the part of a compact JWS its signature covers.
func signed(token string) string {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return token
	}
	return token[:i]
}

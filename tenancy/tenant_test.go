package tenancy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

func TestNewToken(t *testing.T) {
	for kind, prefix := range map[tenancy.TokenKind]string{
		tenancy.TokenAutomation: "klt_", tenancy.TokenPersonal: "klp_", tenancy.TokenOperator: "klo_",
	} {
		tok, secret, err := tenancy.NewToken(kind)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, prefix) || len(secret) != len(prefix)+64 {
			t.Errorf("%s secret %q: want %s and 64 hex digits", kind, secret, prefix)
		}
		if !tok.Hash.Equal(tenancy.HashSecret(secret)) || tok.Hash.Equal(tenancy.HashSecret(secret+"x")) {
			t.Errorf("%s: the hash does not identify the secret", kind)
		}
		if strings.Contains(tok.Hash.String(), secret) || !strings.HasPrefix(tok.ID, "tok_") {
			t.Errorf("%s token %+v", kind, tok)
		}
		back, err := tenancy.ParseTokenHash(tok.Hash.String())
		if err != nil || back != tok.Hash {
			t.Errorf("ParseTokenHash round trip = %v, %v", back, err)
		}
	}
	if _, _, err := tenancy.NewToken("bogus"); !errors.Is(err, kilolock.ErrInvalid) {
		t.Errorf("NewToken(bogus) = %v, want ErrInvalid", err)
	}
}

func TestTenantStateName(t *testing.T) {
	tests := []struct {
		ws, env, name string
		want          string
		ok            bool
	}{
		{"ws_a1", "env_b2", "network", "ws_a1.env_b2.network", true},
		{"ws_a1", "prod", "network", "", false},                  // a slug, not a public id
		{"acme", "env_b2", "network", "", false},                 // not a workspace id
		{"ws_a.1", "env_b2", "network", "", false},               // a dot would make names ambiguous
		{"ws_a1", "env_b2", "a/b", "", false},                    // not a state name
		{"ws_a1", "env_b2", strings.Repeat("n", 128), "", false}, // too long once scoped
	}
	for _, tt := range tests {
		got, err := tenancy.TenantStateName(tt.ws, tt.env, tt.name)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("TenantStateName(%q, %q, %q) = %q, %v; want %q", tt.ws, tt.env, tt.name, got, err, tt.want)
		}
		if err != nil && !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("error %v is not ErrInvalid", err)
		}
	}
}

// TestLocalStateName: no local name can be a tenant's internal name.
func TestLocalStateName(t *testing.T) {
	if err := tenancy.LocalStateName("network"); err != nil {
		t.Errorf("LocalStateName(network) = %v", err)
	}
	name, _ := tenancy.TenantStateName("ws_a1", "env_b2", "network")
	for _, n := range []string{name, "ws_x", "a/b"} {
		if err := tenancy.LocalStateName(n); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("LocalStateName(%q) = %v, want ErrInvalid", n, err)
		}
	}
}

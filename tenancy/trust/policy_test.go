package trust

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

func validPolicy() Policy {
	return Policy{
		EnvironmentID: "env_0123456789abcdef",
		Issuer:        "https://token.actions.githubusercontent.com",
		Audience:      "https://kilolock.example.com",
		Claims:        map[string]string{"repository": "org/app"},
		Scope:         tenancy.ScopeReadWrite,
	}
}

func TestNewPolicyDefaults(t *testing.T) {
	p, err := NewPolicy(validPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.ID, "trs_") || len(p.ID) != 4+16 {
		t.Errorf("id %q: want trs_ and 16 hex digits", p.ID)
	}
	if time.Duration(p.MaxTTL) != time.Hour {
		t.Errorf("max ttl %s: want the default 1h", p.MaxTTL)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_ttl":"1h0m0s"`) {
		t.Errorf("json %s: want max_ttl spelled as a duration", b)
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil || back.MaxTTL != p.MaxTTL || back.Claims["repository"] != "org/app" {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func TestPolicyValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Policy)
		code  string
		words string // in the message
	}{
		{"http issuer", func(p *Policy) { p.Issuer = "http://issuer.example.com" }, "invalid_issuer", "not HTTPS"},
		{"no scheme", func(p *Policy) { p.Issuer = "token.actions.githubusercontent.com" }, "invalid_issuer", "not HTTPS"},
		{"no host", func(p *Policy) { p.Issuer = "https:///path" }, "invalid_issuer", "no host"},
		{"query", func(p *Policy) { p.Issuer = "https://issuer.example.com/?x=1" }, "invalid_issuer", "query"},
		{"userinfo", func(p *Policy) { p.Issuer = "https://u:p@issuer.example.com" }, "invalid_issuer", "user name"},
		{"empty audience", func(p *Policy) { p.Audience = "" }, "invalid_audience", "audience"},
		{"no claims", func(p *Policy) { p.Claims = nil }, "invalid_claim", "constrains"},
		{"only wildcard glob", func(p *Policy) { p.Claims, p.ClaimGlobs = nil, map[string]string{"repository": "*"} }, "invalid_claim", "constrains"},
		{"aud as claim", func(p *Policy) { p.Claims["aud"] = "x" }, "invalid_claim", "aud is checked"},
		{"empty value", func(p *Policy) { p.Claims["ref"] = "" }, "invalid_claim", "claim ref"},
		{"both exact and glob", func(p *Policy) { p.ClaimGlobs = map[string]string{"repository": "org/*"} }, "invalid_claim", "both"},
		{"bad scope", func(p *Policy) { p.Scope = "admin" }, "invalid_scope", `"admin"`},
		{"state with slash", func(p *Policy) { p.StatePattern = "a/b" }, "invalid_state_pattern", "a/b"},
		{"ttl too long", func(p *Policy) { p.MaxTTL = Duration(48 * time.Hour) }, "invalid_max_ttl", "48h"},
		{"ttl too short", func(p *Policy) { p.MaxTTL = Duration(time.Second) }, "invalid_max_ttl", "1s"},
		{"environment slug", func(p *Policy) { p.EnvironmentID = "prod" }, "invalid_environment", "prod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := validPolicy()
			p.Claims = map[string]string{"repository": "org/app"}
			c.edit(&p)
			_, err := NewPolicy(p)
			var ie *kilolock.InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, kilolock.ErrInvalid) {
				t.Fatalf("err %v: want a *kilolock.InvalidError", err)
			}
			if ie.Code != c.code || !strings.Contains(ie.Message, c.words) || ie.Hint == "" {
				t.Errorf("got %s %q (hint %q): want %s mentioning %q", ie.Code, ie.Message, ie.Hint, c.code, c.words)
			}
		})
	}
}

func TestGlobAndState(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"repo:org/app:*", "repo:org/app:ref:refs/heads/main", true},
		{"repo:org/app:*", "repo:org/other:ref:refs/heads/main", false},
		{"refs/heads/release-*", "refs/heads/release-1.2", true},
		{"refs/heads/release-*", "refs/heads/main", false},
		{"org/*", "org/app", true},
		{"org/*", "other/app", false},
		{"a?c", "abc", true},
		{"a?c", "aéc", true},
		{"a?c", "ac", false},
		{"*x*y*", "--x--y--", true},
		{"*x*y*", "--y--x--", false},
		{"exact", "exact", true},
		{"exact", "exact2", false},
	}
	for _, c := range cases {
		if got := matchGlob(c.pattern, c.s); got != c.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
	p := validPolicy()
	if !p.AllowsState("anything") {
		t.Error("a policy without a state pattern reaches every state")
	}
	p.StatePattern = "app-*"
	if !p.AllowsState("app-prod") || p.AllowsState("db-prod") {
		t.Error("state pattern app-* must reach app-prod and not db-prod")
	}
}

func TestParseClaims(t *testing.T) {
	m, err := ParseClaims([]string{"repository=org/app", "ref=refs/heads/main=x"})
	if err != nil || m["repository"] != "org/app" || m["ref"] != "refs/heads/main=x" {
		t.Fatalf("got %v, %v", m, err)
	}
	for _, bad := range [][]string{{"repository"}, {"=x"}, {"a=1", "a=2"}, {"a="}} {
		if _, err := ParseClaims(bad); !errors.Is(err, kilolock.ErrInvalid) {
			t.Errorf("ParseClaims(%q): %v, want invalid", bad, err)
		}
	}
}

// TestPolicyText: a policy's claims and states as kl trust says them.
func TestPolicyText(t *testing.T) {
	p := validPolicy()
	p.Claims["environment"] = "prod"
	p.ClaimGlobs = map[string]string{"ref": "refs/heads/*"}
	if got, want := p.ClaimsText(), "environment=prod repository=org/app ref~refs/heads/*"; got != want {
		t.Errorf("ClaimsText = %q, want %q", got, want)
	}
	if got := p.StatesText(); got != "every state" {
		t.Errorf("StatesText with no pattern = %q", got)
	}
	p.StatePattern = "app-*"
	if got := p.StatesText(); got != "states app-*" {
		t.Errorf("StatesText = %q, want states app-*", got)
	}
}

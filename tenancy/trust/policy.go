package trust

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// Limits of a policy, so that one stays small to store, list and check on
// every request.
const (
	// DefaultMaxTTL is a policy's MaxTTL when none is given: CI tokens live
	// minutes (GitHub's 5–10, GitLab's and a projected service account's an
	// hour by default).
	DefaultMaxTTL = time.Hour
	// MaxMaxTTL is the longest MaxTTL a policy may allow.
	MaxMaxTTL = 24 * time.Hour
	// MinMaxTTL is the shortest.
	MinMaxTTL = time.Minute
	// MaxClaims is how many claims (exact and glob together) a policy may list.
	MaxClaims = 32
	// maxField bounds an issuer, an audience, a claim's name and its value.
	maxField = 256
)

// checkedClaims are checked by the Verifier itself; a policy that listed
// them would only confuse (an audience claim beside --audience).
var checkedClaims = []string{"iss", "aud", "exp", "nbf", "iat"}

// Policy says which OIDC ID tokens reach an environment and with what
// scope: those of Issuer, for Audience, whose claims equal Claims and match
// ClaimGlobs, that live no longer than MaxTTL. The operator manages them
// (kl trust add); nothing long-lived is issued to the CI job.
type Policy struct {
	ID            string `json:"id"` // "trs_…"
	EnvironmentID string `json:"environment_id"`
	// Issuer is the issuer URL, HTTPS, matched exactly against a token's
	// "iss" and the discovery document's "issuer" (a trailing slash counts).
	Issuer string `json:"issuer"`
	// Audience must be one of a token's "aud" values, exactly.
	Audience string `json:"audience"`
	// Claims must each equal the token's claim of that name (a string, or
	// the JSON text of a number or boolean).
	Claims map[string]string `json:"claims,omitempty"`
	// ClaimGlobs must each match the token's claim of that name: '*' is
	// any run of characters, '?' any one.
	ClaimGlobs map[string]string `json:"claim_globs,omitempty"`
	Scope      tenancy.Scope     `json:"scope"`
	// StatePattern is a glob over the environment's state names that the
	// policy reaches; empty reaches every state.
	StatePattern string `json:"state_pattern,omitempty"`
	// MaxTTL is the longest lifetime (exp - iat) of a token accepted.
	MaxTTL  Duration  `json:"max_ttl"`
	Created time.Time `json:"created"`
}

// ClaimsText spells the policy's claims for people, sorted by name: exact
// ones as K=V, then globs as K~P, separated by spaces.
func (p *Policy) ClaimsText() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p.Claims)) {
		parts = append(parts, k+"="+p.Claims[k])
	}
	for _, k := range slices.Sorted(maps.Keys(p.ClaimGlobs)) {
		parts = append(parts, k+"~"+p.ClaimGlobs[k])
	}
	return strings.Join(parts, " ")
}

// StatesText says which states the policy reaches: "states PATTERN", or
// "every state".
func (p *Policy) StatesText() string {
	if p.StatePattern == "" {
		return "every state"
	}
	return "states " + p.StatePattern
}

// NewPolicy returns p with a fresh ID, the default MaxTTL when p has none
// and Created set, once it is valid (see Validate).
func NewPolicy(p Policy) (*Policy, error) {
	p.ID = kilolock.NewID("trs_")
	if p.MaxTTL == 0 {
		p.MaxTTL = Duration(DefaultMaxTTL)
	}
	p.Created = time.Now().UTC()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate reports the first thing wrong with p as a *kilolock.InvalidError
// naming the field and what to give instead.
func (p *Policy) Validate() error {
	if !strings.HasPrefix(p.ID, "trs_") {
		return invalid("invalid_id", fmt.Sprintf("trust policy id %q does not start with trs_", p.ID), "ids of trust policies are trs_ and 16 hex digits; kl trust list shows them")
	}
	if err := kilolock.ValidID("trust policy", p.ID); err != nil {
		return err
	}
	if !strings.HasPrefix(p.EnvironmentID, "env_") {
		return invalid("invalid_environment", fmt.Sprintf("environment %q is not an environment's public id", p.EnvironmentID), "give the environment's public id (env_…); kl env list shows them")
	}
	if err := kilolock.ValidID("environment", p.EnvironmentID); err != nil {
		return err
	}
	if err := validIssuer(p.Issuer); err != nil {
		return err
	}
	if p.Audience == "" || len(p.Audience) > maxField || hasControl(p.Audience) {
		return invalid("invalid_audience", fmt.Sprintf("audience %q must be 1 to %d printable characters", p.Audience, maxField),
			"give the audience the CI job requests its token for, e.g. --audience https://kilolock.example.com (GitHub: core.getIDToken(aud); GitLab: id_tokens.aud)")
	}
	if err := p.validClaims(); err != nil {
		return err
	}
	if !p.Scope.Valid() {
		return invalid("invalid_scope", fmt.Sprintf("scope %q is not one of read, read-write, outputs", p.Scope), "use --scope read, read-write or outputs")
	}
	if len(p.StatePattern) > maxField || hasControl(p.StatePattern) || strings.ContainsAny(p.StatePattern, " /") {
		return invalid("invalid_state_pattern", fmt.Sprintf("state pattern %q must be at most %d characters of a state name, '*' and '?'", p.StatePattern, maxField), "e.g. --state 'app-*'; leave it out to reach every state of the environment")
	}
	if ttl := time.Duration(p.MaxTTL); ttl < MinMaxTTL || ttl > MaxMaxTTL {
		return invalid("invalid_max_ttl", fmt.Sprintf("max TTL %s is outside %s to %s", ttl, MinMaxTTL, MaxMaxTTL), "CI tokens live minutes to an hour: e.g. --max-ttl 1h (the default)")
	}
	return nil
}

func validIssuer(issuer string) error {
	const hint = "give the issuer URL exactly as its tokens' iss claim spells it, e.g. https://token.actions.githubusercontent.com (GitHub), https://gitlab.com (GitLab)"
	u, err := url.Parse(issuer)
	if err != nil || issuer == "" || len(issuer) > maxField {
		return invalid("invalid_issuer", fmt.Sprintf("issuer %q is not a URL", issuer), hint)
	}
	switch {
	case u.Scheme != "https":
		return invalid("invalid_issuer", fmt.Sprintf("issuer %q is not HTTPS: only an HTTPS issuer proves its keys are its own", issuer), hint)
	case u.Host == "" || u.Hostname() == "":
		return invalid("invalid_issuer", fmt.Sprintf("issuer %q names no host", issuer), hint)
	case u.User != nil:
		return invalid("invalid_issuer", fmt.Sprintf("issuer %q holds a user name or password", issuer), hint)
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(issuer, "?#"):
		return invalid("invalid_issuer", fmt.Sprintf("issuer %q has a query or fragment, which an issuer URL never has", issuer), hint)
	}
	return nil
}

func (p *Policy) validClaims() error {
	if len(p.Claims)+len(p.ClaimGlobs) > MaxClaims {
		return invalid("invalid_claim", fmt.Sprintf("%d claims: a policy lists at most %d", len(p.Claims)+len(p.ClaimGlobs), MaxClaims), "keep the claims that say who may use the policy: repository, ref, environment")
	}
	constrains := false
	for _, set := range []struct {
		claims map[string]string
		flag   string
	}{{p.Claims, "--claim"}, {p.ClaimGlobs, "--claim-glob"}} {
		for _, k := range slices.Sorted(maps.Keys(set.claims)) {
			v := set.claims[k]
			if k == "" || len(k) > maxField || hasControl(k) || strings.Contains(k, "=") {
				return invalid("invalid_claim", fmt.Sprintf("claim name %q must be 1 to %d printable characters without '='", k, maxField), "e.g. "+set.flag+" repository=org/app")
			}
			if slices.Contains(checkedClaims, k) {
				return invalid("invalid_claim", fmt.Sprintf("claim %s is checked by kld itself and cannot be listed", k), "use --issuer and --audience; exp, nbf and iat are always checked, and --max-ttl bounds the lifetime")
			}
			if v == "" || len(v) > maxField || hasControl(v) {
				return invalid("invalid_claim", fmt.Sprintf("claim %s: value %q must be 1 to %d printable characters", k, v, maxField), "e.g. "+set.flag+" "+k+"=…")
			}
			if _, both := p.Claims[k]; both && set.flag == "--claim-glob" {
				return invalid("invalid_claim", fmt.Sprintf("claim %s is listed both exact and as a glob", k), "list it once: --claim for an exact value, --claim-glob for a pattern")
			}
			if set.flag == "--claim" || !onlyWildcards(v) {
				constrains = true
			}
		}
	}
	if !constrains {
		// Any repository can mint a token of a public issuer for any
		// audience: a policy of issuer and audience alone trusts them all.
		return invalid("invalid_claim", "the policy lists no claim that constrains who holds the token: every job of the issuer could use it",
			"name the job: e.g. --claim repository=org/app (GitHub), --claim project_path=group/app (GitLab), --claim sub=system:serviceaccount:NS:NAME (Kubernetes)")
	}
	return nil
}

// AllowsState reports whether the policy reaches the state named state of
// its environment.
func (p *Policy) AllowsState(state string) bool {
	return p.StatePattern == "" || matchGlob(p.StatePattern, state)
}

// ParseClaims parses the K=V arguments of --claim or --claim-glob into a
// map, refusing a malformed or repeated one.
func ParseClaims(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" || v == "" {
			return nil, invalid("invalid_claim", fmt.Sprintf("claim %q is not NAME=VALUE", a), "e.g. --claim repository=org/app")
		}
		if _, dup := m[k]; dup {
			return nil, invalid("invalid_claim", fmt.Sprintf("claim %s is given twice", k), "give each claim once; use --claim-glob for several values")
		}
		m[k] = v
	}
	return m, nil
}

// Duration is a time.Duration spelled in JSON as Go spells it ("1h0m0s"),
// so a policy reads the same in the API as on the command line.
type Duration time.Duration

// String returns the duration as time.Duration spells it.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string such as "1h" or "90m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("max ttl: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return invalid("invalid_max_ttl", fmt.Sprintf("max TTL %q is not a duration", s), "e.g. 1h, 30m")
	}
	*d = Duration(v)
	return nil
}

func invalid(code, message, hint string) error {
	return &kilolock.InvalidError{Code: code, Message: message, Hint: hint}
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

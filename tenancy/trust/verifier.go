package trust

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/kilolock/kilolock/tenancy"
)

// Defaults and bounds of Options.
const (
	// DefaultRefreshEvery is how old an issuer's keys may be before a
	// verification fetches them again, and the most Options allow: a key
	// the issuer withdraws stops working within it.
	DefaultRefreshEvery = 5 * time.Minute
	// DefaultMinFetchInterval is how often, at most, an issuer is asked
	// for its keys, however many tokens of unknown key ids arrive.
	DefaultMinFetchInterval = 10 * time.Second
	// DefaultStaleFor is how long past their refresh keys keep serving
	// while the issuer cannot be reached.
	DefaultStaleFor = 10 * time.Minute
	// MaxClockSkew is the clock skew allowed on exp, nbf and iat, and the
	// most Options allow.
	MaxClockSkew = 60 * time.Second
	// maxIssuers bounds the issuers whose keys are cached; only issuers of
	// policies are ever cached, so it is reached only by an operator who
	// configures that many.
	maxIssuers = 1000
)

// Options configure a Verifier. The zero value is the default of each.
type Options struct {
	// HTTPClient fetches issuers; nil means NewHTTPClient("") (the system's
	// roots and SSL_CERT_FILE). Its answers are cut at 1 MiB.
	HTTPClient *http.Client
	// RefreshEvery: 0 means DefaultRefreshEvery; at most that.
	RefreshEvery time.Duration
	// MinFetchInterval: 0 means DefaultMinFetchInterval; at most
	// RefreshEvery.
	MinFetchInterval time.Duration
	// StaleFor: 0 means DefaultStaleFor.
	StaleFor time.Duration
	// ClockSkew: 0 means MaxClockSkew; at most that.
	ClockSkew time.Duration
}

// Verifier checks OIDC ID tokens against trust policies with go-oidc. It
// fetches only the issuers of the policies it is given, caches their
// discovery documents and keys, and makes no network call for a token
// whose keys it holds and are fresh. It is safe for concurrent use; one
// serves a whole kld.
type Verifier struct {
	opts   Options
	client *http.Client

	mu      sync.Mutex
	issuers map[string]*issuerKeys

	verified verifiedTokens
}

// NewVerifier returns a Verifier with opts, once they are within bounds.
func NewVerifier(opts Options) (*Verifier, error) {
	opts.RefreshEvery = cmp.Or(opts.RefreshEvery, DefaultRefreshEvery)
	opts.MinFetchInterval = cmp.Or(opts.MinFetchInterval, min(DefaultMinFetchInterval, opts.RefreshEvery))
	opts.StaleFor = cmp.Or(opts.StaleFor, DefaultStaleFor)
	opts.ClockSkew = cmp.Or(opts.ClockSkew, MaxClockSkew)
	switch {
	case opts.RefreshEvery < 0 || opts.RefreshEvery > DefaultRefreshEvery:
		return nil, fmt.Errorf("key refresh interval %s: want at most %s, so that a withdrawn key stops working", opts.RefreshEvery, DefaultRefreshEvery)
	case opts.MinFetchInterval < 0 || opts.MinFetchInterval > opts.RefreshEvery:
		return nil, fmt.Errorf("minimum fetch interval %s: want at most the refresh interval %s", opts.MinFetchInterval, opts.RefreshEvery)
	case opts.ClockSkew < 0 || opts.ClockSkew > MaxClockSkew:
		return nil, fmt.Errorf("clock skew %s: want at most %s", opts.ClockSkew, MaxClockSkew)
	case opts.StaleFor < 0:
		return nil, fmt.Errorf("stale keys period %s is negative", opts.StaleFor)
	}
	client := opts.HTTPClient
	if client == nil {
		var err error
		if client, err = NewHTTPClient(""); err != nil {
			return nil, err
		}
	}
	return &Verifier{opts: opts, client: limitedClient(client), issuers: map[string]*issuerKeys{}}, nil
}

// Verify returns the identity of the ID token raw under one of policies
// (the trust policies that may apply: those of the request's environment),
// reaching the state named state ("" when the request names none), or an
// *Error saying which check failed.
//
// Checks are made in this order: the token's shape; its algorithm (RS256
// or ES256); a policy naming its issuer (401 unknown issuer, with no
// fetch); a policy of the issuer naming one of its audiences; its
// signature, with go-oidc, by a current key of the issuer; exp, nbf and
// iat within the clock skew; then, policy by policy, the listed claims
// (403 trust mismatch), the lifetime against the policy's max TTL and the
// state pattern. When several policies accept the token, the one of the
// widest scope wins (read-write, read, outputs), then the lowest id.
//
// A token that is genuine and accepted in every way but its expiry is
// answered with its Identity beside the credentials_expired *Error (the
// only case of both being non-nil): the caller may let it finish what it
// started, such as the run whose lock its identity holds, and must refuse
// it anything else.
func (v *Verifier) Verify(ctx context.Context, raw string, policies []Policy, state string) (*Identity, error) {
	if !LooksLikeIDToken(raw) {
		return nil, refuse(CheckFormat, "the credential is not an OIDC ID token (a JWT)", "give the job's ID token as the password (TF_HTTP_PASSWORD) or a Bearer token")
	}
	tok, e := peek(raw)
	if e != nil {
		return nil, e
	}
	if !slices.Contains(acceptedAlgs, tok.alg) {
		return nil, refuse(CheckSignature, fmt.Sprintf("the token is signed with algorithm %s: only RS256 and ES256 are accepted", short(tok.alg)),
			"use the issuer's own ID token: CI issuers sign with RS256 or ES256")
	}
	var byIssuer, byAudience []*Policy
	for i := range policies {
		if policies[i].Issuer == tok.issuer {
			byIssuer = append(byIssuer, &policies[i])
		}
	}
	if len(byIssuer) == 0 {
		return nil, unknownIssuer(tok.issuer, policies)
	}
	for _, p := range byIssuer {
		if slices.Contains(tok.audience, p.Audience) {
			byAudience = append(byAudience, p)
		}
	}
	if len(byAudience) == 0 {
		return nil, refuse(CheckAudience, fmt.Sprintf("the token's audience %s is not one that a trust policy of issuer %s names", short(strings.Join(tok.audience, ",")), short(tok.issuer)),
			"request the token for the audience the trust policy names (kl trust list shows it): GitHub core.getIDToken(AUDIENCE), GitLab id_tokens: aud, Kubernetes serviceAccountToken.audience")
	}
	idt, claims, failed := v.verifySignature(ctx, raw, tok.issuer, byAudience[0].Audience)
	if failed != nil {
		return nil, failed
	}
	expired := v.checkTimes(idt, claims)
	if expired != nil && expired.Code != CodeCredentialsExpired {
		return nil, expired
	}
	slices.SortFunc(byAudience, func(a, b *Policy) int {
		return cmp.Or(cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)), strings.Compare(a.ID, b.ID))
	})
	var first *Error
	for _, p := range byAudience {
		if !slices.Contains(idt.Audience, p.Audience) {
			continue
		}
		e := p.accepts(idt, claims, state)
		if e == nil && expired != nil {
			return newIdentity(p, idt, claims), expired
		}
		if e == nil {
			return newIdentity(p, idt, claims), nil
		}
		if first == nil {
			first = e
		}
	}
	if expired != nil { // expiry is checked before the claims
		return nil, expired
	}
	if first == nil { // go-oidc verified an audience that peek did not see
		return nil, refuse(CheckAudience, "the token's verified audience is not one a trust policy names", "request the token for the audience the trust policy names")
	}
	return nil, first
}

// verifySignature returns the token raw of issuer once its signature
// verifies with go-oidc against the issuer's current keys, and its claims.
// A token verified before with the same key set is taken as it was: the
// requests of one run pay the signature once, until the keys refresh.
func (v *Verifier) verifySignature(ctx context.Context, raw, issuer, audience string) (*oidc.IDToken, map[string]json.RawMessage, *Error) {
	keys := v.keysOf(issuer)
	sum := sha256.Sum256([]byte(raw))
	if snap, e := keys.current(ctx); e == nil {
		if t := v.verified.get(sum, snap); t != nil {
			keys.used.Store(time.Now().UnixNano())
			return t.idt, t.claims, nil
		}
	}
	var failed *Error
	var used *keySnapshot
	verifier := oidc.NewVerifier(issuer, keys, &oidc.Config{
		ClientID:             audience,
		SupportedSigningAlgs: acceptedAlgs,
		// go-oidc allows 5 minutes of skew on nbf and none on exp: the
		// time checks are ours, with Options.ClockSkew on all three.
		SkipExpiryCheck: true,
	})
	vctx := context.WithValue(context.WithValue(ctx, failureKey{}, &failed), usedKeysKey{}, &used)
	idt, err := verifier.Verify(vctx, raw)
	if failed != nil {
		return nil, nil, failed
	}
	if err != nil {
		return nil, nil, &Error{Code: CodeCredentialsInvalid, Check: CheckSignature, Message: "the token does not verify", Hint: "mint a fresh ID token in the job and give it as it is", Err: err}
	}
	var claims map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return nil, nil, &Error{Code: CodeCredentialsInvalid, Check: CheckFormat, Message: "the token's claims are not a JSON object", Hint: "give the job's ID token as it is", Err: err}
	}
	if used != nil {
		v.verified.put(sum, &verifiedToken{snap: used, idt: idt, claims: claims})
	}
	return idt, claims, nil
}

// checkTimes checks exp, nbf and iat, each within the clock skew. go-oidc
// has parsed exp and iat; nbf is read here.
func (v *Verifier) checkTimes(idt *oidc.IDToken, claims map[string]json.RawMessage) *Error {
	now, skew := time.Now(), v.opts.ClockSkew
	const clocks = "check that the clocks of kld and the CI runner are synchronized (NTP)"
	if idt.Expiry.IsZero() {
		return refuse(CheckExpiry, "the token has no exp claim: a credential that never expires is not accepted", "use the CI system's ID token, which always expires")
	}
	var expired *Error // reported once nbf and iat are known good
	if now.After(idt.Expiry.Add(skew)) {
		expired = &Error{Code: CodeCredentialsExpired, Check: CheckExpiry,
			Message: fmt.Sprintf("the token expired at %s, %s ago", idt.Expiry.UTC().Format(time.RFC3339), now.Sub(idt.Expiry).Round(time.Second)),
			Hint:    "fetch a fresh ID token in the job right before kl or tofu runs: they live minutes"}
	}
	if raw, ok := claims["nbf"]; ok {
		nbf, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return refuse(CheckNotBefore, "the token's nbf claim is not a number", "give the CI system's ID token as it is")
		}
		if at := time.Unix(int64(nbf), 0); now.Add(skew).Before(at) {
			return refuse(CheckNotBefore, fmt.Sprintf("the token is not valid before %s", at.UTC().Format(time.RFC3339)), clocks)
		}
	}
	if idt.IssuedAt.IsZero() {
		return refuse(CheckIssuedAt, "the token has no iat claim, so its lifetime cannot be checked", "use the CI system's ID token, which carries iat")
	}
	if now.Add(skew).Before(idt.IssuedAt) {
		return refuse(CheckIssuedAt, fmt.Sprintf("the token claims to be issued at %s, in the future", idt.IssuedAt.UTC().Format(time.RFC3339)), clocks)
	}
	return expired
}

// accepts checks the token against p alone: its claims, its lifetime and
// the state.
func (p *Policy) accepts(idt *oidc.IDToken, claims map[string]json.RawMessage, state string) *Error {
	const hint = "run the job from where the trust policy expects, or have the operator add a policy for this one (kl trust add --claim …)"
	for _, set := range []struct {
		want  map[string]string
		match func(want, got string) bool
	}{{p.Claims, func(w, g string) bool { return w == g }}, {p.ClaimGlobs, matchGlob}} {
		for _, name := range slices.Sorted(maps.Keys(set.want)) {
			got, present, scalar := claimText(claims, name)
			var msg string
			switch {
			case !present:
				msg = fmt.Sprintf("the token has no claim %s, which trust policy %s requires", name, p.ID)
			case !scalar:
				msg = fmt.Sprintf("the token's claim %s is an object or a list, which trust policy %s cannot match", name, p.ID)
			case !set.match(set.want[name], got):
				msg = fmt.Sprintf("the token's claim %s is %s, which trust policy %s does not accept", name, short(got), p.ID)
			default:
				continue
			}
			return &Error{Code: CodeTrustMismatch, Check: CheckClaim, Claim: name, Message: msg, Hint: hint}
		}
	}
	if life := idt.Expiry.Sub(idt.IssuedAt); life > time.Duration(p.MaxTTL) {
		return refuse(CheckLifetime, fmt.Sprintf("the token lives %s (exp - iat), longer than trust policy %s allows (%s)", life, p.ID, p.MaxTTL),
			fmt.Sprintf("request a token that lives at most %s (Kubernetes: expirationSeconds), or have the operator raise the policy's --max-ttl", p.MaxTTL))
	}
	if state != "" && !p.AllowsState(state) {
		return &Error{Code: CodeTrustMismatch, Check: CheckState, Message: fmt.Sprintf("trust policy %s does not reach state %s", p.ID, short(state)),
			Hint: "use a state the policy reaches (kl trust list shows its pattern), or have the operator add a policy for this state"}
	}
	return nil
}

// claimText returns claim name as text: a string as it is, a number or a
// boolean as its JSON text (GitLab's project_id is a string, some issuers'
// are numbers). scalar is false for an object, a list or null.
func claimText(claims map[string]json.RawMessage, name string) (text string, present, scalar bool) {
	raw, ok := claims[name]
	if !ok {
		return "", false, false
	}
	// Most claims are plain strings: take them without a decoder.
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && !bytes.ContainsAny(raw[1:n-1], "\\\"") {
		return string(raw[1 : n-1]), true, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true, true
	}
	t := strings.TrimSpace(string(raw))
	if t == "true" || t == "false" {
		return t, true, true
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return t, true, true
	}
	return "", true, false
}

func newIdentity(p *Policy, idt *oidc.IDToken, claims map[string]json.RawMessage) *Identity {
	pc := *p
	id := &Identity{Policy: &pc, Issuer: idt.Issuer, Subject: idt.Subject, Expires: idt.Expiry}
	for _, c := range identityClaims {
		for _, name := range c.names {
			if s, _, scalar := claimText(claims, name); scalar {
				*c.field(id) = s
				break
			}
		}
	}
	return id
}

func unknownIssuer(issuer string, policies []Policy) *Error {
	e := refuse(CheckIssuer, fmt.Sprintf("no trust policy of this environment accepts tokens of issuer %s", short(issuer)),
		"have the operator add one for this issuer (kl trust add --issuer …), or use a token of an issuer a policy names (kl trust list)")
	for i := range policies {
		if strings.TrimSuffix(policies[i].Issuer, "/") == strings.TrimSuffix(issuer, "/") {
			e.Hint = fmt.Sprintf("trust policy %s names issuer %s: issuers match exactly, a trailing slash included; re-add the policy with --issuer %s",
				policies[i].ID, policies[i].Issuer, issuer)
		}
	}
	return e
}

// keysOf returns the cached keys of issuer, making an empty cache for it.
// Only issuers of policies get here, so a token cannot grow the map; the
// least recently used issuer leaves when maxIssuers is reached.
func (v *Verifier) keysOf(issuer string) *issuerKeys {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.issuers[issuer]; ok {
		return k
	}
	if len(v.issuers) >= maxIssuers {
		var oldest *issuerKeys
		for _, k := range v.issuers {
			if oldest == nil || k.used.Load() < oldest.used.Load() {
				oldest = k
			}
		}
		delete(v.issuers, oldest.issuer)
	}
	k := &issuerKeys{issuer: issuer, opts: &v.opts, client: v.client}
	k.used.Store(time.Now().UnixNano())
	v.issuers[issuer] = k
	return k
}

func scopeRank(s tenancy.Scope) int {
	switch s {
	case tenancy.ScopeReadWrite:
		return 0
	case tenancy.ScopeRead:
		return 1
	}
	return 2
}

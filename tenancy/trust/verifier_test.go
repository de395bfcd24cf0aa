package trust_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/oidctest"
	"github.com/kilolock/kilolock/tenancy"
	"github.com/kilolock/kilolock/tenancy/trust"
)

const aud = "https://kilolock.example.com"

// fixture is an issuer, a verifier trusting the issuer's CA from its file,
// and a policy of the issuer for org/app's branches.
type fixture struct {
	iss    *oidctest.Issuer
	v      *trust.Verifier
	policy trust.Policy
}

func newFixture(t testing.TB, opts trust.Options) *fixture {
	t.Helper()
	iss := oidctest.Start(t)
	client, err := trust.NewHTTPClient(iss.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	opts.HTTPClient = client
	v, err := trust.NewVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{iss: iss, v: v, policy: policyOf(t, iss.URL)}
}

func policyOf(t testing.TB, issuer string) trust.Policy {
	t.Helper()
	p, err := trust.NewPolicy(trust.Policy{
		EnvironmentID: "env_0123456789abcdef",
		Issuer:        issuer,
		Audience:      aud,
		Claims:        map[string]string{"repository": "org/app"},
		ClaimGlobs:    map[string]string{"ref": "refs/heads/*"},
		Scope:         tenancy.ScopeReadWrite,
		StatePattern:  "app-*",
	})
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

func (f *fixture) verify(t testing.TB, token string) (*trust.Identity, error) {
	t.Helper()
	return f.v.Verify(context.Background(), token, []trust.Policy{f.policy}, "app-prod")
}

func (f *fixture) token(t testing.TB, alg string, edit func(map[string]any)) string {
	t.Helper()
	c := f.iss.GitHubClaims(aud, "org/app", "refs/heads/main")
	if edit != nil {
		edit(c)
	}
	return f.iss.Sign(t, f.iss.Key(alg), c)
}

// refusal asserts err is a *trust.Error of code and check (and claim).
func refusal(t testing.TB, err error, code string, check trust.Check, claim string) *trust.Error {
	t.Helper()
	var te *trust.Error
	if !errors.As(err, &te) {
		t.Fatalf("err %v: want a *trust.Error %s/%s", err, code, check)
	}
	if te.Code != code || te.Check != check || te.Claim != claim || te.Message == "" || te.Hint == "" {
		t.Fatalf("got %s/%s claim %q: %q (hint %q); want %s/%s claim %q", te.Code, te.Check, te.Claim, te.Message, te.Hint, code, check, claim)
	}
	return te
}

func TestVerifyValidTokens(t *testing.T) {
	f := newFixture(t, trust.Options{})
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			id, err := f.verify(t, f.token(t, alg, nil))
			if err != nil {
				t.Fatal(err)
			}
			if id.Policy.ID != f.policy.ID || id.Policy.Scope != tenancy.ScopeReadWrite || id.Repository != "org/app" || id.Ref != "refs/heads/main" || id.RunID != "7311" {
				t.Errorf("identity %+v", id)
			}
			want := f.policy.ID + " sub:repo:org/app:ref:refs/heads/main repository:org/app ref:refs/heads/main run:7311"
			if id.String() != want {
				t.Errorf("String() = %q, want %q", id.String(), want)
			}
		})
	}
	// Both algorithms' keys came from one discovery and one key set.
	if d, j := f.iss.DiscoveryFetches(), f.iss.JWKSFetches(); d != 1 || j != 1 {
		t.Errorf("%d discovery and %d JWKS fetches for two tokens: want 1 and 1", d, j)
	}
}

func TestVerifyRefusals(t *testing.T) {
	f := newFixture(t, trust.Options{})
	now := time.Now().Unix()
	rs := f.iss.Key("RS256")
	tampered := func() string {
		good := strings.Split(f.token(t, "RS256", nil), ".")
		other := strings.Split(f.token(t, "RS256", func(c map[string]any) { c["repository"] = "org/other" }), ".")
		return good[0] + "." + other[1] + "." + good[2]
	}
	cases := []struct {
		name        string
		token       string
		state       string
		code        string
		check       trust.Check
		claim       string
		messageHas  string
		wantsStatus int
	}{
		{"another repository", f.token(t, "RS256", func(c map[string]any) { c["repository"] = "org/other" }), "", trust.CodeTrustMismatch, trust.CheckClaim, "repository", `"org/other"`, 403},
		{"a tag outside the ref glob", f.token(t, "ES256", func(c map[string]any) { c["ref"] = "refs/tags/v1" }), "", trust.CodeTrustMismatch, trust.CheckClaim, "ref", `"refs/tags/v1"`, 403},
		{"claim missing", f.token(t, "RS256", func(c map[string]any) { delete(c, "repository") }), "", trust.CodeTrustMismatch, trust.CheckClaim, "repository", "no claim repository", 403},
		{"claim not a string", f.token(t, "RS256", func(c map[string]any) { c["repository"] = []string{"org/app"} }), "", trust.CodeTrustMismatch, trust.CheckClaim, "repository", "object or a list", 403},
		{"state outside the pattern", f.token(t, "RS256", nil), "db-prod", trust.CodeTrustMismatch, trust.CheckState, "", `"db-prod"`, 403},
		{"expired", f.token(t, "RS256", func(c map[string]any) { c["iat"], c["nbf"], c["exp"] = now-600, now-600, now-300 }), "", trust.CodeCredentialsExpired, trust.CheckExpiry, "", "expired at", 401},
		{"no exp", f.token(t, "RS256", func(c map[string]any) { delete(c, "exp") }), "", trust.CodeCredentialsInvalid, trust.CheckExpiry, "", "no exp", 401},
		{"another audience", f.token(t, "RS256", func(c map[string]any) { c["aud"] = "sts.amazonaws.com" }), "", trust.CodeCredentialsInvalid, trust.CheckAudience, "", `"sts.amazonaws.com"`, 401},
		{"audience list without ours", f.token(t, "RS256", func(c map[string]any) { c["aud"] = []string{"a", "b"} }), "", trust.CodeCredentialsInvalid, trust.CheckAudience, "", `"a,b"`, 401},
		{"alg none", oidctest.Unsigned(t, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main")), "", trust.CodeCredentialsInvalid, trust.CheckSignature, "", `"none"`, 401},
		{"HS256 keyed with the public key", oidctest.SignHMAC(t, rs.ID, rs.PublicKeyDER(t), f.iss.GitHubClaims(aud, "org/app", "refs/heads/main")), "", trust.CodeCredentialsInvalid, trust.CheckSignature, "", `"HS256"`, 401},
		{"payload swapped under a signature", tampered(), "", trust.CodeCredentialsInvalid, trust.CheckSignature, "", "does not verify", 401},
		{"RS256 header on an ES256 key id", f.iss.SignWithHeader(t, rs, map[string]any{"alg": "RS256", "kid": f.iss.Key("ES256").ID}, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main")), "", trust.CodeCredentialsInvalid, trust.CheckSignature, "", "key id", 401},
		{"not yet valid", f.token(t, "RS256", func(c map[string]any) { c["nbf"] = now + 120 }), "", trust.CodeCredentialsInvalid, trust.CheckNotBefore, "", "not valid before", 401},
		{"issued in the future", f.token(t, "RS256", func(c map[string]any) { c["iat"], c["nbf"] = now+120, now }), "", trust.CodeCredentialsInvalid, trust.CheckIssuedAt, "", "future", 401},
		{"no iat", f.token(t, "RS256", func(c map[string]any) { delete(c, "iat") }), "", trust.CodeCredentialsInvalid, trust.CheckIssuedAt, "", "no iat", 401},
		{"lives longer than the max TTL", f.token(t, "RS256", func(c map[string]any) { c["iat"], c["nbf"], c["exp"] = now, now, now+2*3600 }), "", trust.CodeCredentialsInvalid, trust.CheckLifetime, "", "2h0m0s", 401},
		{"a kl token", "klt_" + strings.Repeat("0", 64), "", trust.CodeCredentialsInvalid, trust.CheckFormat, "", "not an OIDC ID token", 401},
		{"garbage JWT", "eyJhbGciOi.e30.x", "", trust.CodeCredentialsInvalid, trust.CheckFormat, "", "header", 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := cmpOr(c.state, "app-prod")
			_, err := f.v.Verify(context.Background(), c.token, []trust.Policy{f.policy}, state)
			te := refusal(t, err, c.code, c.check, c.claim)
			if !strings.Contains(te.Message, c.messageHas) || te.Status() != c.wantsStatus {
				t.Errorf("message %q (status %d): want it to hold %q, status %d", te.Message, te.Status(), c.messageHas, c.wantsStatus)
			}
			if strings.Contains(te.Message+te.Hint, "org/app") && c.claim != "" {
				t.Errorf("a trust mismatch shows the policy's value: %q %q", te.Message, te.Hint)
			}
		})
	}
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestVerifyClockSkew(t *testing.T) {
	f := newFixture(t, trust.Options{})
	now := time.Now().Unix()
	for name, edit := range map[string]func(map[string]any){
		"expired 30 s ago":    func(c map[string]any) { c["iat"], c["nbf"], c["exp"] = now-330, now-330, now-30 },
		"valid in 30 s":       func(c map[string]any) { c["nbf"] = now + 30 },
		"issued 30 s ahead":   func(c map[string]any) { c["iat"], c["nbf"] = now+30, now },
		"lives exactly 1 h":   func(c map[string]any) { c["exp"] = now + 3600 },
		"numeric run_id":      func(c map[string]any) { c["run_id"] = 7311 },
		"aud list with ours":  func(c map[string]any) { c["aud"] = []string{"other", aud} },
		"no kid, key by type": nil, // below
	} {
		t.Run(name, func(t *testing.T) {
			var tok string
			if edit == nil {
				k := f.iss.Key("ES256")
				tok = f.iss.SignWithHeader(t, k, map[string]any{"alg": "ES256"}, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main"))
			} else {
				tok = f.token(t, "RS256", edit)
			}
			id, err := f.verify(t, tok)
			if err != nil {
				t.Fatal(err)
			}
			if id.RunID != "7311" {
				t.Errorf("run id %q", id.RunID)
			}
		})
	}
}

func TestVerifyUnknownIssuerNeverFetched(t *testing.T) {
	f := newFixture(t, trust.Options{})
	other := oidctest.Start(t)
	// A token of another issuer, and one claiming the trusted issuer whose
	// header points at the other's keys (jku, x5u): neither may fetch.
	foreign := other.Sign(t, other.Key("RS256"), other.GitHubClaims(aud, "org/app", "refs/heads/main"))
	_, err := f.verify(t, foreign)
	refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckIssuer, "")
	claims := other.GitHubClaims(aud, "org/app", "refs/heads/main")
	claims["iss"] = f.iss.URL
	k := other.Key("RS256")
	pointed := other.SignWithHeader(t, k, map[string]any{"alg": "RS256", "kid": k.ID, "jku": other.URL + "/keys", "x5u": other.URL + "/keys"}, claims)
	_, err = f.verify(t, pointed)
	refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckSignature, "")
	if n := other.Fetches(); n != 0 {
		t.Errorf("the unconfigured issuer was fetched %d times: want never", n)
	}
	// No policy at all: nothing is fetched either.
	_, err = f.v.Verify(context.Background(), f.token(t, "RS256", nil), nil, "")
	refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckIssuer, "")
	if n := f.iss.DiscoveryFetches(); n != 1 {
		t.Errorf("%d discovery fetches of the configured issuer: want 1 (for the token that named it)", n)
	}
}

func TestVerifyIssuerTrailingSlash(t *testing.T) {
	f := newFixture(t, trust.Options{})
	f.policy.Issuer += "/"
	_, err := f.verify(t, f.token(t, "RS256", nil))
	te := refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckIssuer, "")
	if !strings.Contains(te.Hint, "trailing slash") || !strings.Contains(te.Hint, f.policy.ID) {
		t.Errorf("hint %q: want it to name the policy and the trailing slash", te.Hint)
	}
	if n := f.iss.Fetches(); n != 0 {
		t.Errorf("%d fetches for an issuer no policy names exactly", n)
	}
}

func TestWithdrawnKeyStopsWorking(t *testing.T) {
	const refresh = 300 * time.Millisecond
	f := newFixture(t, trust.Options{RefreshEvery: refresh, MinFetchInterval: 50 * time.Millisecond})
	k := f.iss.Key("RS256")
	if _, err := f.verify(t, f.token(t, "RS256", nil)); err != nil {
		t.Fatal(err)
	}
	// A token verified before the withdrawal, and so remembered as
	// verified, must stop working as a new one does.
	seen := f.iss.Sign(t, k, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main"))
	if _, err := f.verify(t, seen); err != nil {
		t.Fatal(err)
	}
	f.iss.Withdraw(k)
	// Until the refresh the cached key still verifies: no call per request.
	if _, err := f.verify(t, f.iss.Sign(t, k, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main"))); err != nil {
		t.Fatalf("within the refresh interval: %v", err)
	}
	if _, err := f.verify(t, seen); err != nil {
		t.Fatalf("a verified token within the refresh interval: %v", err)
	}
	time.Sleep(refresh + 50*time.Millisecond)
	_, err := f.verify(t, f.iss.Sign(t, k, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main")))
	te := refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckSignature, "")
	if !strings.Contains(te.Message, k.ID) {
		t.Errorf("message %q: want the withdrawn key id", te.Message)
	}
	_, err = f.verify(t, seen)
	refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckSignature, "")
	// The other key still works after the refresh.
	if _, err := f.verify(t, f.token(t, "ES256", nil)); err != nil {
		t.Fatal(err)
	}
}

func TestRotatedKeyWorks(t *testing.T) {
	const interval = 100 * time.Millisecond
	f := newFixture(t, trust.Options{MinFetchInterval: interval})
	if _, err := f.verify(t, f.token(t, "RS256", nil)); err != nil {
		t.Fatal(err)
	}
	old := f.iss.Key("RS256")
	fresh := f.iss.AddKey(t, "RS256")
	f.iss.Withdraw(old)
	time.Sleep(interval)
	before := f.iss.JWKSFetches()
	id, err := f.verify(t, f.iss.Sign(t, fresh, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main")))
	if err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	if id.Repository != "org/app" {
		t.Errorf("identity %+v", id)
	}
	if n := f.iss.JWKSFetches() - before; n != 1 {
		t.Errorf("%d JWKS fetches for the new key id: want 1", n)
	}
	if _, err := f.verify(t, f.iss.Sign(t, fresh, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main"))); err != nil || f.iss.JWKSFetches()-before != 1 {
		t.Errorf("second token of the new key: %v, %d fetches: want it verified from the cache", err, f.iss.JWKSFetches()-before)
	}
}

// unknownKeyIDs returns n tokens, each under a key id the issuer never
// published.
func unknownKeyIDs(t *testing.T, f *fixture, n int) []string {
	t.Helper()
	k := f.iss.Key("RS256")
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = f.iss.SignWithHeader(t, k, map[string]any{"alg": "RS256", "kid": fmt.Sprintf("made-up-%d", i)}, f.iss.GitHubClaims(aud, "org/app", "refs/heads/main"))
	}
	return tokens
}

// flood verifies tokens at once and asserts each is refused on its
// signature.
func flood(t *testing.T, f *fixture, tokens []string) {
	t.Helper()
	n := len(tokens)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range tokens {
		wg.Go(func() { _, errs[i] = f.verify(t, tokens[i]) })
	}
	wg.Wait()
	for _, err := range errs {
		refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckSignature, "")
	}
}

func TestUnknownKeyIDFloodIsRateLimited(t *testing.T) {
	t.Run("default interval, two issuers", func(t *testing.T) {
		f := newFixture(t, trust.Options{}) // one fetch per issuer per 10 s
		g := newFixture(t, trust.Options{})
		// One verifier for both issuers, trusting both CAs from one file.
		both := filepath.Join(t.TempDir(), "cas.pem")
		os.WriteFile(both, append(readFile(t, f.iss.CAFile()), readFile(t, g.iss.CAFile())...), 0o600)
		client, err := trust.NewHTTPClient(both)
		if err != nil {
			t.Fatal(err)
		}
		if f.v, err = trust.NewVerifier(trust.Options{HTTPClient: client}); err != nil {
			t.Fatal(err)
		}
		g.v = f.v
		tokens := map[*fixture][]string{f: unknownKeyIDs(t, f, 100), g: unknownKeyIDs(t, g, 100)}
		for _, x := range []*fixture{f, g} {
			flood(t, x, tokens[x])
		}
		// Both floods at once, on both issuers.
		var wg sync.WaitGroup
		for _, x := range []*fixture{f, g, f, g} {
			wg.Go(func() { flood(t, x, tokens[x]) })
		}
		wg.Wait()
		for _, x := range []*fixture{f, g} {
			if n := x.iss.JWKSFetches(); n != 1 {
				t.Errorf("issuer %s: %d JWKS fetches for 300 tokens of unknown key ids within 10 s: want 1", x.iss.URL, n)
			}
		}
	})
	t.Run("short interval", func(t *testing.T) {
		const interval = time.Second
		f := newFixture(t, trust.Options{MinFetchInterval: interval})
		tokens := unknownKeyIDs(t, f, 200)
		if _, err := f.verify(t, f.token(t, "RS256", nil)); err != nil {
			t.Fatal(err)
		}
		flood(t, f, tokens) // right after the first fetch: none
		if n := f.iss.JWKSFetches(); n != 1 {
			t.Errorf("%d JWKS fetches: want 1, the first", n)
		}
		time.Sleep(interval)
		flood(t, f, tokens) // one interval later: exactly one more
		if n := f.iss.JWKSFetches(); n != 2 {
			t.Errorf("%d JWKS fetches after one interval: want 2", n)
		}
	})
}

func TestIssuerUnavailable(t *testing.T) {
	t.Run("CA not trusted", func(t *testing.T) {
		iss := oidctest.Start(t)
		v, err := trust.NewVerifier(trust.Options{}) // system roots only
		if err != nil {
			t.Fatal(err)
		}
		tok := iss.Sign(t, iss.Key("RS256"), iss.GitHubClaims(aud, "org/app", "refs/heads/main"))
		_, err = v.Verify(context.Background(), tok, []trust.Policy{policyOf(t, iss.URL)}, "app-prod")
		te := refusal(t, err, trust.CodeIssuerUnavailable, trust.CheckKeys, "")
		if te.Status() != 503 || !errors.Is(err, trust.ErrIssuerUnavailable) || !strings.Contains(te.Error(), "certificate") || !strings.Contains(te.Hint, "SSL_CERT_FILE") {
			t.Errorf("got %d %v (hint %q)", te.Status(), te, te.Hint)
		}
	})
	t.Run("down, after serving keys", func(t *testing.T) {
		const refresh, stale = 200 * time.Millisecond, 400 * time.Millisecond
		f := newFixture(t, trust.Options{RefreshEvery: refresh, MinFetchInterval: 50 * time.Millisecond, StaleFor: stale})
		if _, err := f.verify(t, f.token(t, "RS256", nil)); err != nil {
			t.Fatal(err)
		}
		f.iss.SetDown(true)
		time.Sleep(refresh + 50*time.Millisecond)
		if _, err := f.verify(t, f.token(t, "RS256", nil)); err != nil {
			t.Fatalf("keys past their refresh while the issuer is down: %v; want them kept for StaleFor", err)
		}
		time.Sleep(stale)
		_, err := f.verify(t, f.token(t, "RS256", nil))
		refusal(t, err, trust.CodeIssuerUnavailable, trust.CheckKeys, "")
		f.iss.SetDown(false)
		time.Sleep(50 * time.Millisecond)
		if _, err := f.verify(t, f.token(t, "RS256", nil)); err != nil {
			t.Fatalf("issuer back: %v", err)
		}
	})
}

func TestVerifierOptionsBounded(t *testing.T) {
	for _, o := range []trust.Options{
		{RefreshEvery: 6 * time.Minute},
		{ClockSkew: 61 * time.Second},
		{RefreshEvery: time.Second, MinFetchInterval: 2 * time.Second},
	} {
		if _, err := trust.NewVerifier(o); err == nil {
			t.Errorf("NewVerifier(%+v): want an error", o)
		}
	}
}

func TestLooksLikeIDToken(t *testing.T) {
	f := newFixture(t, trust.Options{})
	for s, want := range map[string]bool{
		f.token(t, "RS256", nil):          true,
		f.token(t, "ES256", nil):          true,
		"klt_" + strings.Repeat("ab", 32): false,
		"klp_" + strings.Repeat("ab", 32): false,
		"eyJhbGciOiJub25lIn0.e30.":        true, // shaped as one; Verify refuses it
		"eyJ.a.b.c":                       false,
		"eyJhbGci OiJ.e30.x":              false,
		"":                                false,
		"eyJ" + strings.Repeat("a", 17<<10) + ".a.b": false,
	} {
		if got := trust.LooksLikeIDToken(s); got != want {
			t.Errorf("LooksLikeIDToken(%.30q) = %v, want %v", s, got, want)
		}
	}
}

// TestVerifiedTokenChecksEachTime: a token remembered as verified is still
// checked in full on every use but for its signature: its expiry, its
// audience and claims against the policies given this time.
func TestVerifiedTokenChecksEachTime(t *testing.T) {
	f := newFixture(t, trust.Options{ClockSkew: 10 * time.Millisecond})
	now := time.Now().Unix()
	tok := f.token(t, "ES256", func(c map[string]any) { c["iat"], c["nbf"], c["exp"] = now, now, now+1 })
	if _, err := f.verify(t, tok); err != nil {
		t.Fatal(err)
	}
	other := f.policy
	other.Claims = map[string]string{"repository": "org/other"}
	_, err := f.v.Verify(context.Background(), tok, []trust.Policy{other}, "app-prod")
	refusal(t, err, trust.CodeTrustMismatch, trust.CheckClaim, "repository")
	elsewhere := f.policy
	elsewhere.Audience = "https://elsewhere.example.com"
	_, err = f.v.Verify(context.Background(), tok, []trust.Policy{elsewhere}, "app-prod")
	refusal(t, err, trust.CodeCredentialsInvalid, trust.CheckAudience, "")
	time.Sleep(2100 * time.Millisecond)
	_, err = f.verify(t, tok)
	refusal(t, err, trust.CodeCredentialsExpired, trust.CheckExpiry, "")
}

// BenchmarkVerifyNewToken is BenchmarkVerifyWarm with a token never seen
// before on each verification (each job's first request): its signature
// is checked, with the keys cached.
func BenchmarkVerifyNewToken(b *testing.B) {
	f := newFixture(b, trust.Options{})
	for _, alg := range []string{"RS256", "ES256"} {
		b.Run(alg, func(b *testing.B) {
			ctx := context.Background()
			if _, err := f.v.Verify(ctx, f.token(b, alg, nil), []trust.Policy{f.policy}, "app-prod"); err != nil {
				b.Fatal(err)
			}
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				b.StopTimer()
				tok := f.token(b, alg, func(c map[string]any) { c["jti"] = fmt.Sprint(len(took)) })
				b.StartTimer()
				start := time.Now()
				if _, err := f.v.Verify(ctx, tok, []trust.Policy{f.policy}, "app-prod"); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
}

// Package trust is workload identity: a CI job (GitHub Actions, GitLab CI,
// a Kubernetes service account) authenticates with the short-lived OIDC
// ID token its platform mints, and a trust policy the operator manages
// says which tokens reach which environment, with what scope. Nothing
// long-lived is issued to the job.
//
// # Basics
//
// A Policy names an issuer (HTTPS, matched exactly), an audience, the
// claims a token must carry (exact, or globs) and a scope. A Verifier
// checks a token with github.com/coreos/go-oidc/v3 against the policies
// that may apply and returns the Identity it speaks for, or an *Error
// whose Code, Status, Message and Hint are the HTTP answer:
//
//	v, err := trust.NewVerifier(trust.Options{}) // SSL_CERT_FILE is honoured
//	if err != nil {
//		return err
//	}
//	p, err := trust.NewPolicy(trust.Policy{
//		EnvironmentID: "env_0123456789abcdef",
//		Issuer:        "https://token.actions.githubusercontent.com",
//		Audience:      "https://kilolock.example.com",
//		Claims:        map[string]string{"repository": "org/app"},
//		ClaimGlobs:    map[string]string{"ref": "refs/heads/*"},
//		Scope:         tenancy.ScopeReadWrite,
//	})
//	if err != nil {
//		return err // a *kilolock.InvalidError: 400
//	}
//	if trust.LooksLikeIDToken(password) {
//		id, err := v.Verify(ctx, password, []trust.Policy{*p}, "network")
//		var te *trust.Error
//		if errors.As(err, &te) {
//			// answer te.Status() with {te.Code, te.Message, te.Hint}
//		}
//		actor := id.String() // "trs_… sub:repo:org/app:ref:… repository:org/app ref:… run:…"
//	}
//
// Policies are kept by a store that implements PolicyStore (both SQL
// stores do), so that every kld replica on one database shares them;
// Control adds, lists and removes them for the operator, audited.
//
// # Caveats
//
// The Verifier fetches only the issuers of the policies it is given: a
// token cannot name a URL to fetch. An issuer's discovery document and
// keys are cached; they are fetched again when older than
// Options.RefreshEvery (5 minutes at most, so a withdrawn key stops
// working), and on a key id not in the cache, but never more than once per
// Options.MinFetchInterval (10 s) per issuer. So a key the issuer has just
// rotated in may be refused for up to that interval after another fetch.
// While the issuer cannot be reached, cached keys serve for
// Options.StaleFor past their refresh, then tokens of it are refused with
// ErrIssuerUnavailable (503).
//
// A trust mismatch names the claim and the token's own value, never the
// policy's: any job of a public issuer can mint a token for any audience,
// so policy values are not shown to token holders.
package trust

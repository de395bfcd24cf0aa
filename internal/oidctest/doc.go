// Package oidctest runs a real OpenID Connect issuer over HTTPS for tests:
// a discovery document, a JWKS with RS256 and ES256 keys that tests can
// rotate and withdraw, and ID tokens minted with any claims and any
// algorithm, the refused ones (none, HS256) included. Its certificate
// authority is written to a PEM file, to give to kld as a user would
// (SSL_CERT_FILE, or a CA file flag). It counts the fetches it serves, so
// a test can bound how often a verifier calls it.
//
//	iss := oidctest.Start(t)
//	tok := iss.Sign(t, iss.Key("RS256"), iss.GitHubClaims("https://kl.example", "org/app", "refs/heads/main"))
//	// verify tok against a policy of iss.URL, trusting iss.CAFile()
package oidctest

package trust

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxTokenBytes bounds an ID token: CI tokens are 1–2 KiB, and nothing
// larger is decoded.
const MaxTokenBytes = 16 << 10

// acceptedAlgs are the only signature algorithms a token may use: never
// none, never HMAC (whose secret a confused verifier takes from the public
// key), never anything a CI issuer does not sign with.
var acceptedAlgs = []string{"RS256", "ES256"}

// LooksLikeIDToken reports whether credential has the shape of a JWT (three
// base64url segments, the first a JSON object) rather than of a KiloLock
// token (klt_…, klp_…, klo_…). It decodes nothing, so it can pick the
// verification path of every request; the verification itself decides.
func LooksLikeIDToken(credential string) bool {
	// "eyJ" is `{"` in base64url: every JOSE header starts so.
	if len(credential) < 8 || len(credential) > MaxTokenBytes || !strings.HasPrefix(credential, "eyJ") {
		return false
	}
	dots := 0
	for i := 0; i < len(credential); i++ {
		switch c := credential[i]; {
		case c == '.':
			dots++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return dots == 2
}

// peeked is what the Verifier reads of a token before its signature is
// checked, only to choose the policies and the issuer's keys: nothing in
// it is trusted, and none of it can make the Verifier fetch a URL.
type peeked struct {
	alg, kid string
	issuer   string
	audience []string
}

func peek(raw string) (*peeked, *Error) {
	const hint = "give the job's OIDC ID token as it is (TF_HTTP_PASSWORD, or Authorization: Bearer)"
	h, p, ok := strings.Cut(raw, ".")
	p, _, ok2 := strings.Cut(p, ".")
	if !ok || !ok2 {
		return nil, refuse(CheckFormat, "the credential is not a JWT: it needs three dot-separated parts", hint)
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(h, &header); err != nil {
		return nil, &Error{Code: CodeCredentialsInvalid, Check: CheckFormat, Message: "the token's header is not base64url JSON", Hint: hint, Err: err}
	}
	var claims struct {
		Iss string          `json:"iss"`
		Aud json.RawMessage `json:"aud"`
	}
	if err := decodeSegment(p, &claims); err != nil {
		return nil, &Error{Code: CodeCredentialsInvalid, Check: CheckFormat, Message: "the token's claims are not base64url JSON", Hint: hint, Err: err}
	}
	out := &peeked{alg: header.Alg, kid: header.Kid, issuer: claims.Iss}
	// aud is a string or a list of strings (RFC 7519 4.1.3).
	var one string
	if json.Unmarshal(claims.Aud, &one) == nil {
		out.audience = []string{one}
	} else if json.Unmarshal(claims.Aud, &out.audience) != nil {
		return nil, refuse(CheckAudience, "the token's aud claim is neither a string nor a list of strings", "request the token for the audience the trust policy names")
	}
	return out, nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return fmt.Errorf("decode base64url: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode json: %w", err)
	}
	return nil
}

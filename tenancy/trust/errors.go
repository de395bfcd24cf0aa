package trust

import (
	"errors"
	"net/http"
)

// Sentinel errors; every *Error matches exactly one of them with errors.Is.
var (
	// ErrCredentialsInvalid: the token is not one a policy accepts (bad
	// signature, unknown issuer, another audience…): 401.
	ErrCredentialsInvalid = errors.New("credentials invalid")
	// ErrCredentialsExpired: the token is genuine but expired: 401.
	ErrCredentialsExpired = errors.New("credentials expired")
	// ErrTrustMismatch: the token is genuine but its claims are not those
	// a policy of the environment trusts: 403.
	ErrTrustMismatch = errors.New("trust mismatch")
	// ErrIssuerUnavailable: the issuer's keys cannot be fetched, and none
	// cached is recent enough to trust: 503, worth a retry.
	ErrIssuerUnavailable = errors.New("issuer unavailable")
)

// Codes of an Error, as the HTTP layer answers them in {"error": …}.
const (
	CodeCredentialsInvalid = "credentials_invalid"
	CodeCredentialsExpired = "credentials_expired"
	CodeTrustMismatch      = "trust_mismatch"
	CodeIssuerUnavailable  = "issuer_unavailable"
)

// Check names the verification step a token failed.
type Check string

// Checks of a token, in the order the Verifier makes them.
const (
	CheckFormat    Check = "format"    // not a compact JWS of JSON
	CheckSignature Check = "signature" // algorithm, key id or signature
	CheckIssuer    Check = "issuer"    // no policy names the token's issuer
	CheckAudience  Check = "audience"  // no policy of the issuer names its audience
	CheckExpiry    Check = "expiry"    // exp passed, or missing
	CheckNotBefore Check = "not_before"
	CheckIssuedAt  Check = "issued_at" // iat missing, or in the future
	CheckLifetime  Check = "lifetime"  // exp - iat longer than the policy's max TTL
	CheckClaim     Check = "claim"     // a listed claim differs (trust mismatch)
	CheckState     Check = "state"     // the state is outside the policy's pattern
	CheckKeys      Check = "keys"      // the issuer's keys could not be fetched
)

// Error is a refused ID token: what the HTTP layer answers (Status, Code,
// Message, Hint) and why (Check, Claim, Err for the server's log only).
// Message and Hint never hold another tenant's policy values: a trust
// mismatch names the claim and the token's own value, not what the policy
// wants, since any job of a public issuer can mint a token.
type Error struct {
	Code    string // CodeCredentialsInvalid, …
	Check   Check
	Claim   string // for CheckClaim: the claim that did not match
	Message string
	Hint    string
	Err     error // the underlying cause, for logs; nil when none
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's code.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case CodeCredentialsInvalid:
		return target == ErrCredentialsInvalid
	case CodeCredentialsExpired:
		return target == ErrCredentialsExpired
	case CodeTrustMismatch:
		return target == ErrTrustMismatch
	case CodeIssuerUnavailable:
		return target == ErrIssuerUnavailable
	}
	return false
}

// Status is the HTTP status that answers e: 401, 403 or 503.
func (e *Error) Status() int {
	switch e.Code {
	case CodeTrustMismatch:
		return http.StatusForbidden
	case CodeIssuerUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusUnauthorized
}

func refuse(check Check, message, hint string) *Error {
	return &Error{Code: CodeCredentialsInvalid, Check: check, Message: message, Hint: hint}
}

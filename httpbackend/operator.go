package httpbackend

import (
	"fmt"
	"strings"

	"github.com/kilolock/kilolock/tenancy"
)

// MinOperatorSecret is the least length of an operator token after its
// klo_ prefix: 128 bits in hex.
const MinOperatorSecret = 32

// ValidOperatorSecret checks the operator token kld is given
// (Options.OperatorToken, kld --operator-token): klo_
// and at least MinOperatorSecret printable characters, no space. A short
// or unprefixed secret (hunter2) is refused rather than guarded by a hash
// alone: it opens every tenant's control plane.
func ValidOperatorSecret(secret string) error {
	rest, ok := strings.CutPrefix(secret, tenancy.TokenOperator.Prefix())
	switch {
	case !ok:
		return fmt.Errorf("an operator token starts with %s; make one with `kl token operator`", tenancy.TokenOperator.Prefix())
	case len(rest) < MinOperatorSecret:
		return fmt.Errorf("%d characters after %s is too short to guard the control API, give at least %d; make one with `kl token operator`", len(rest), tenancy.TokenOperator.Prefix(), MinOperatorSecret)
	case strings.IndexFunc(rest, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("a space or control character in the token (a stray line break?); make one with `kl token operator`")
	}
	return nil
}

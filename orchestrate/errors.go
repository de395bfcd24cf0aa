package orchestrate

import (
	"fmt"

	"github.com/kilolock/kilolock"
)

// invalid is input the driver cannot act on (a scope, a plan spec, a
// backend): a *kilolock.InvalidError with what to do next.
func invalid(msg, hint string) error {
	return &kilolock.InvalidError{Code: "invalid_request", Message: msg, Hint: hint}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

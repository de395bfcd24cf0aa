package kldconfig

import (
	"errors"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store"
)

// kld's exit codes, sysexits.h where one fits (cmd/kld and docs/deploy.md
// list them).
const (
	ExitFailure = 1 // a failure while serving
	ExitUsage   = 2 // a wrong flag or command
	// ExitSchema: the database's schema is newer than this kld knows
	// (EX_DATAERR); restarting will not help, a newer kld will.
	ExitSchema      = 65
	ExitUnavailable = 69 // the database cannot be reached at start (EX_UNAVAILABLE)
	ExitListen      = 71 // the address cannot be listened on (EX_OSERR)
	ExitConfig      = 78 // the database setting or its encryption keys are wrong (EX_CONFIG)
)

// ExitError is a failure and the exit code it maps to.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns the exit code err maps to (ExitFailure when it names none)
// and what to do about it, when err says ("" otherwise).
func Exit(err error) (code int, hint string) {
	code = ExitFailure
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	}
	var (
		ke *kilolock.KeyError
		ie *kilolock.InvalidError
		se *store.SchemaTooNewError
	)
	switch {
	case errors.As(err, &se):
		hint = se.Hint()
	case errors.As(err, &ke):
		hint = ke.Hint
	case errors.As(err, &ie):
		hint = ie.Hint
	}
	return code, hint
}

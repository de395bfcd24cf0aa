package klcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/orchestrate"
	"github.com/kilolock/kilolock/reserve"
)

// Exit codes of kl. Scripts may rely on them.
const (
	ExitOK          = 0 // the command did what was asked
	ExitError       = 1 // any other failure, including a refused (writing) query
	ExitUsage       = 2 // bad flags or arguments, or input the server rejects as invalid
	ExitNotFound    = 3 // the state or version does not exist
	ExitConflict    = 4 // locked by someone else, lock id mismatch, or a conflicting write
	ExitUnavailable = 5 // the server or the database cannot be reached; retry later
	// kl plan and kl apply:
	ExitBlocked = 6 // an orchestrated apply gave up waiting for its reservations (--wait-timeout)
	ExitAborted = 7 // the apply run was aborted (kl apply abort) or its lease ran out: the apply was stopped
	ExitCLI     = 8 // the IaC CLI (tofu or terraform) failed: its plan, init or apply exited non-zero
)

// ExitCode maps an error returned by a command to kl's exit code.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, new(*reserve.BlockedError)):
		return ExitBlocked
	case errors.As(err, new(*orchestrate.AbortedError)):
		return ExitAborted
	case errors.As(err, new(*orchestrate.CLIError)):
		return ExitCLI
	case errors.As(err, &ue), errors.Is(err, kilolock.ErrInvalid):
		return ExitUsage
	case errors.Is(err, kilolock.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, kilolock.ErrLocked), errors.Is(err, kilolock.ErrLockMismatch),
		errors.Is(err, kilolock.ErrConflict), errors.Is(err, kilolock.ErrStale):
		return ExitConflict
	case errors.Is(err, kilolock.ErrUnavailable), unreachable(err) != nil:
		return ExitUnavailable
	case errors.Is(err, kilolock.ErrQuotaExceeded):
		return ExitError // past a hard limit: kl quota check, kl plan and kl apply fail with 1
	}
	return ExitError
}

// UsageError is a command line kl cannot act on.
type UsageError struct {
	Message string
	Hint    string
}

func (e *UsageError) Error() string { return e.Message }

// hintError is an error with a next step attached.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hint: hint}
}

// Hint returns what the user can do about err, "" when nothing is known.
func Hint(err error) string {
	var (
		he *hintError
		se *client.Error
		ue *UsageError
		ie *kilolock.InvalidError
		ce *kilolock.ConflictError
		te *kilolock.ControlError
	)
	var (
		h      string
		hinter interface{ Hint() string }
	)
	switch { // kl's own hint first: it knows the command
	case errors.As(err, &he):
		h = he.hint
	case errors.As(err, &hinter):
		h = hinter.Hint()
	case errors.As(err, &ue):
		h = ue.Hint
	case errors.As(err, &ie):
		h = ie.Hint
	case errors.As(err, &ce):
		h = ce.Hint
	case errors.As(err, &te):
		h = te.Hint
	}
	if h != "" {
		return h
	}
	switch {
	case errors.As(err, &se) && se.Body.Error == "" && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden): // not kld's answer
		return "the server wants credentials: set KL_TOKEN"
	case unreachable(err) != nil:
		return fmt.Sprintf("is kld running at %s? point kl at it with --server (KL_SERVER), or at a database with --database (KL_DATABASE_URL)", unreachable(err).server)
	case errors.Is(err, kilolock.ErrNotFound):
		return "list the states with `kl states`, a state's versions with `kl history NAME`"
	case errors.Is(err, kilolock.ErrReadOnly):
		return "kl query runs in a read-only transaction; states change only through terraform/tofu and kl's own commands"
	}
	return ""
}

// Report writes err for a person: "kl: message" and, when known, a
// "hint: …" line. A server's hint is shown on its own line rather than
// inside the message. Control characters are escaped, as in all of kl's
// output: messages carry what clients sent.
func Report(w io.Writer, err error) {
	if err == nil {
		return
	}
	w = escaped(w)
	msg := err.Error()
	var ce *client.Error
	if u := unreachable(err); u != nil {
		msg = u.Error()
	} else if errors.As(err, &ce) && ce.Hint() != "" {
		msg = strings.Replace(msg, " ("+ce.Hint()+")", "", 1)
	}
	fmt.Fprintf(w, "kl: %s\n", msg)
	if h := Hint(err); h != "" {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}

// unreachableError is a server that did not answer: kl cannot reach it,
// or it did not answer in time.
type unreachableError struct {
	server string
	err    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the server at %s: %v", e.server, e.err)
}

// unreachable is the server err could not reach, from the *url.Error of
// its transport; nil when err is none or was canceled.
func unreachable(err error) *unreachableError {
	var ue *url.Error
	if !errors.As(err, &ue) || errors.Is(err, context.Canceled) {
		return nil
	}
	server := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil {
		server = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	}
	return &unreachableError{server: server, err: ue.Err}
}

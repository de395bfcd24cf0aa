package klcli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kilolock/kilolock"
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
	case errors.As(err, new(*AbortedError)):
		return ExitAborted
	case errors.As(err, new(*CLIError)):
		return ExitCLI
	case errors.As(err, &ue), errors.Is(err, kilolock.ErrInvalid):
		return ExitUsage
	case errors.Is(err, kilolock.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, kilolock.ErrLocked), errors.Is(err, kilolock.ErrLockMismatch),
		errors.Is(err, kilolock.ErrConflict), errors.Is(err, kilolock.ErrStale):
		return ExitConflict
	case errors.Is(err, kilolock.ErrUnavailable):
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

// APIError is an error answered by a server: its HTTP status and the JSON
// body {"error": code, "message": …, "hint": …}. It matches the root
// package's sentinel errors with errors.Is (404 is ErrNotFound, 423
// ErrLocked, …), so callers need not know it came over HTTP.
type APIError struct {
	Status  int
	Code    string
	Message string
	Hint    string
	// body is the whole JSON error body, for the fields beyond these
	// (the blockers of a 423 reserved, the run of a 409 run_ended).
	body []byte
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Hint != "" {
		return msg + " (hint: " + e.Hint + ")"
	}
	return msg
}

// Unwrap returns the sentinel error the code or, failing that, the status
// stands for; nil when neither is known.
func (e *APIError) Unwrap() error {
	code := strings.ToLower(e.Code)
	switch {
	case strings.Contains(code, "read_only"), strings.Contains(code, "readonly"):
		return kilolock.ErrReadOnly
	case strings.Contains(code, "encrypted"):
		return kilolock.ErrEncrypted
	case strings.Contains(code, "mismatch"):
		return kilolock.ErrLockMismatch
	case strings.HasPrefix(code, "quota_"):
		return kilolock.ErrQuotaExceeded
	}
	switch e.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return kilolock.ErrInvalid
	case http.StatusNotFound:
		return kilolock.ErrNotFound
	case http.StatusConflict:
		return kilolock.ErrConflict
	case http.StatusLocked:
		return kilolock.ErrLocked
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		http.StatusTooManyRequests: // busy for now: retry later
		return kilolock.ErrUnavailable
	}
	return nil
}

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
		ae *APIError
		ue *UsageError
		ie *kilolock.InvalidError
		ce *kilolock.ConflictError
		te *kilolock.ControlError
	)
	var (
		h      string
		hinter interface{ Hint() string }
	)
	switch {
	case errors.As(err, &hinter):
		h = hinter.Hint()
	case errors.As(err, &he):
		h = he.hint
	case errors.As(err, &ae):
		h = ae.Hint
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
	case errors.Is(err, kilolock.ErrNotFound):
		return "list the states with `kl states`, a state's versions with `kl history NAME`"
	case errors.Is(err, kilolock.ErrReadOnly):
		return "kl query runs in a read-only transaction; states change only through terraform/tofu and kl's own commands"
	}
	return ""
}

// Report writes err for a person: "kl: message" and, when known, a
// "hint: …" line. An APIError's hint is shown on its own line rather than
// inside the message. Control characters are escaped, as in all of kl's
// output: messages carry what clients sent.
func Report(w io.Writer, err error) {
	if err == nil {
		return
	}
	w = escaped(w)
	msg := err.Error()
	var ae *APIError
	if errors.As(err, &ae) && ae.Hint != "" {
		msg = strings.Replace(msg, " (hint: "+ae.Hint+")", "", 1)
	}
	fmt.Fprintf(w, "kl: %s\n", msg)
	if h := Hint(err); h != "" {
		fmt.Fprintf(w, "hint: %s\n", h)
	}
}

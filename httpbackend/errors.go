package httpbackend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// retryAfterSeconds is what a 503 asks clients to wait.
const retryAfterSeconds = 5

// httpError is a refusal decided by the handler itself: a bad checksum, an
// oversize body, an unknown route.
type httpError struct {
	status  int
	code    string
	message string
	hint    string
	allow   []string // for a 405
	// retryAfter asks the client to retry in retryAfterSeconds (a 503).
	retryAfter bool
}

func (e *httpError) Error() string { return e.message }

// errorBody is the JSON body of every error answer: one type with the
// client, which decodes it into the root's errors.
type errorBody = client.ErrorBody

// prunedHint says what to read instead of a version retention pruned.
func prunedHint(nf *kilolock.VersionNotFoundError) string {
	refs := make([]string, len(nf.Nearest))
	for i, n := range nf.Nearest {
		refs[i] = fmt.Sprintf("@%d", n)
	}
	read := "read a version still kept"
	if len(refs) > 0 {
		read = "read the nearest version still kept, " + strings.Join(refs, " or ")
	}
	return fmt.Sprintf("%s; `kl retention pruned %s` lists what was pruned, when and by which policy (`kl retention list` shows the policies); only a backup taken before has the pruned version", read, nf.State)
}

// lockedBody is the protocol's 423: the holder's LockInfo, with the error
// fields every answer carries.
type lockedBody = client.LockedBody

// answer is an error translated for HTTP.
type answer struct {
	status     int
	body       errorBody
	retryAfter bool
	internal   bool // log the error: the user did nothing wrong
}

// writeError is the one error writer: it maps err to a status and a JSON
// body. On the Terraform protocol routes a 423 carries the holder's LockInfo
// as its whole body, which Terraform and OpenTofu decode to show who holds
// the lock and to retry with -lock-timeout.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	a := classify(err)
	ri := info(r)
	ri.errCode = a.body.Error
	a.body.RequestID = ri.id
	h.metrics.ObserveAnswer(a.status, a.body.Error)
	var conflict *kilolock.ConflictError
	if errors.As(err, &conflict) {
		ri.conflict = &a.body
		h.metrics.ObserveRefusal(a.body.Error)
	}
	if qe, ok := asQuotaError(err); ok {
		h.recordQuotaRefusal(r, qe, a.body.Hint)
	}
	if a.internal {
		h.log.Error("request failed", "request_id", ri.id, "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if a.retryAfter {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	if len(a.body.Allow) > 0 {
		w.Header().Set("Allow", strings.Join(a.body.Allow, ", "))
	}
	w.Header().Set("X-Kilolock-Error", a.body.Error)
	if a.status == http.StatusLocked && ri.protocol && a.body.Holder != nil {
		// The CLIs read a 423's body as the holder's LockInfo (to print
		// it); its fields come first, and error, message and hint beside
		// them, which the CLIs' decoding ignores.
		writeJSON(w, a.status, lockedBody{LockInfo: *a.body.Holder, Error: a.body.Error, Message: a.body.Message, Hint: a.body.Hint, RequestID: a.body.RequestID})
		return
	}
	writeJSON(w, a.status, &a.body)
}

// classify maps an error of the root package (sentinels and typed errors,
// matched with errors.Is/As), or of the handler, to its answer.
func classify(err error) answer {
	var (
		he       *httpError
		locked   *kilolock.LockedError
		mismatch *kilolock.LockMismatchError
		conflict *kilolock.ConflictError
		invalid  *kilolock.InvalidError
		refused  *kilolock.RefusedError
		tooLarge *http.MaxBytesError
		readOnly *kilolock.ReadOnlyLockError
		noVer    *kilolock.VersionNotFoundError
		control  *kilolock.ControlError
		reserved *kilolock.ReservedError
		keyErr   *kilolock.KeyError
		ended    *kilolock.RunEndedError
		quotaErr *kilolock.QuotaError
		moveErr  *history.MoveError
	)
	switch {
	case errors.As(err, &moveErr):
		return moveAnswer(moveErr)
	case errors.As(err, &quotaErr):
		b := errorBody{Error: "quota_exceeded", Message: quotaErr.Error(), Hint: quotaErr.Hint()}
		quotaBody(&b, quotaErr)
		return answer{status: http.StatusForbidden, body: b}
	case errors.As(err, &he):
		return answer{status: he.status, retryAfter: he.retryAfter, body: errorBody{Error: he.code, Message: he.message, Hint: he.hint, Allow: he.allow}}
	case errors.As(err, &tooLarge):
		return answer{status: http.StatusRequestEntityTooLarge, body: errorBody{Error: "body_too_large", Message: fmt.Sprintf("the request body is larger than %d bytes", tooLarge.Limit), Hint: "raise the server's limit (kld --body-limit); nothing was stored"}}
	case errors.As(err, &reserved):
		return answer{status: http.StatusLocked, body: errorBody{Error: "reserved", Message: reserved.Error(), Hint: reservedHint(reserved.State, reserved.Blockers), Blockers: reserved.Blockers}}
	case errors.As(err, &ended):
		return answer{status: http.StatusConflict, body: errorBody{Error: "run_ended", Message: ended.Error(), Hint: runEndedHint(ended.Run), Run: ended.Run}}
	case errors.As(err, &locked) && isRunHolder(locked.Holder):
		h := locked.Holder
		return answer{status: http.StatusLocked, body: errorBody{
			Error:   "locked",
			Message: locked.Error(),
			Hint:    fmt.Sprintf("an orchestrated apply by %s holds reservations on this state: wait for it (retry with -lock-timeout=10m); if it is stuck, abort it with `kl apply abort --apply-id %s`", orUnknown(h.Who), h.ID),
			Holder:  &h,
		}}
	case errors.As(err, &locked) && locked.MaxHolders > 0:
		h := locked.Holder
		return answer{status: http.StatusLocked, body: errorBody{
			Error:   "too_many_holders",
			Message: locked.Error(),
			Hint:    fmt.Sprintf("the state admits at most %d holders at once: wait for one to finish (retry with -lock-timeout=10m; `kl status %s` lists them), or have the operator raise the cap (kld --max-lock-holders)", locked.MaxHolders, locked.State),
			Holder:  &h,
		}}
	case errors.As(err, &readOnly):
		return answer{status: http.StatusForbidden, body: errorBody{Error: "token_read_only", Message: readOnly.Message, Hint: readOnlyHint}}
	case errors.As(err, &locked):
		h := locked.Holder
		return answer{status: http.StatusLocked, body: errorBody{
			Error:   "locked",
			Message: locked.Error(),
			Hint:    fmt.Sprintf("wait for %s to finish (retry with -lock-timeout=10m), or, if that run is gone, release it with `tofu force-unlock %s` (terraform cannot force-unlock an http backend: POST /v1/state-unlock/%s?ID=%s)", orUnknown(h.Who), h.ID, locked.State, h.ID),
			Holder:  &h,
		}}
	case errors.As(err, &mismatch):
		b := errorBody{Error: "lock_mismatch", Message: mismatch.Error()}
		if mismatch.Holder.ID == "" {
			b.Hint = "no lock is held: it was released or force-unlocked while you worked; nothing was stored, run the command again to take a new lock"
		} else {
			h := mismatch.Holder
			b.Holder = &h
			b.Hint = fmt.Sprintf("the state is held by %s (lock id %s); nothing was stored, wait for it and run again", orUnknown(h.Who), h.ID)
		}
		return answer{status: http.StatusConflict, body: b}
	case errors.As(err, &conflict):
		return answer{status: http.StatusConflict, body: conflictBody(conflict)}
	case errors.As(err, &refused):
		return answer{status: http.StatusForbidden, body: errorBody{Error: refused.Code, Message: refused.Message, Hint: refused.Hint}}
	case errors.As(err, &invalid):
		return answer{status: http.StatusBadRequest, body: errorBody{Error: invalid.Code, Message: invalid.Message, Hint: invalid.Hint}}
	case errors.As(err, &control):
		status := http.StatusNotFound
		if errors.Is(control.Err, kilolock.ErrConflict) {
			status = http.StatusConflict
		}
		return answer{status: status, body: errorBody{Error: control.Code, Message: control.Message, Hint: control.Hint}}
	case errors.As(err, &noVer) && noVer.Ref.Kind == kilolock.RefTag:
		return answer{status: http.StatusNotFound, body: errorBody{Error: "version_not_found", Message: err.Error(),
			Hint: fmt.Sprintf("`kl tag list %s` lists its tags (kl tag set %s TAG @N makes one); versions are also @N, @latest, @-K and serial:S", noVer.State, noVer.State)}}
	case errors.As(err, &noVer) && noVer.Pruned != nil:
		return answer{status: http.StatusNotFound, body: errorBody{Error: "version_pruned", Message: err.Error(), Hint: prunedHint(noVer),
			Pruned: noVer.Pruned, Nearest: noVer.Nearest}}
	case errors.As(err, &noVer):
		return answer{status: http.StatusNotFound, body: errorBody{Error: "version_not_found", Message: err.Error(), Hint: fmt.Sprintf("pick a version in that range; `kl history %s` lists them", noVer.State)}}
	case errors.Is(err, kilolock.ErrNotFound):
		return answer{status: http.StatusNotFound, body: errorBody{Error: "not_found", Message: err.Error(), Hint: "check the state name; `kl states` (GET /v1/api/states) lists the states"}}
	case errors.Is(err, kilolock.ErrEncrypted):
		return answer{status: http.StatusUnprocessableEntity, body: errorBody{Error: "state_encrypted", Message: err.Error(), Hint: "the state is client-side encrypted by OpenTofu, so the server cannot read its resources; use tofu with the encryption key, or whole-version history and rollback"}}
	case errors.Is(err, kilolock.ErrReadOnly):
		return answer{status: http.StatusForbidden, body: errorBody{Error: "read_only", Message: err.Error(), Hint: "queries run in a read-only transaction: use SELECT (or WITH … SELECT); change states through terraform/tofu or kl"}}
	case errors.Is(err, kilolock.ErrStale):
		return answer{status: http.StatusConflict, body: errorBody{Error: "stale", Message: err.Error(), Hint: "the state kept changing under this write; nothing was stored, try again"}}
	case errors.Is(err, kilolock.ErrLocked):
		return answer{status: http.StatusLocked, body: errorBody{Error: "locked", Message: err.Error(), Hint: "wait for the holder to finish, or force-unlock it if its run is gone"}}
	case errors.Is(err, kilolock.ErrLockMismatch):
		return answer{status: http.StatusConflict, body: errorBody{Error: "lock_mismatch", Message: err.Error(), Hint: "nothing was stored; run the command again to take a new lock"}}
	case errors.Is(err, kilolock.ErrConflict):
		return answer{status: http.StatusConflict, body: errorBody{Error: "conflict", Message: err.Error(), Hint: "nothing was stored; pull the state, re-plan and apply again"}}
	case errors.Is(err, kilolock.ErrInvalid):
		return answer{status: http.StatusBadRequest, body: errorBody{Error: "invalid", Message: err.Error(), Hint: "correct the request and send it again"}}
	case errors.As(err, &keyErr):
		// The server's keys, not the caller's request: 503 until an
		// operator gives kld the key the database needs.
		return answer{status: http.StatusServiceUnavailable, retryAfter: true, internal: true, body: errorBody{Error: keyErr.Code, Message: keyErr.Message, Hint: keyErr.Hint}}
	case errors.Is(err, kilolock.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return answer{status: http.StatusServiceUnavailable, retryAfter: true, body: errorBody{Error: "unavailable", Message: "the database is unavailable: " + err.Error(), Hint: fmt.Sprintf("retry in %d seconds; if it lasts, check the database the server points at (kld --database)", retryAfterSeconds)}}
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this, the log line does.
		return answer{status: 499, body: errorBody{Error: "canceled", Message: "the client closed the request", Hint: "nothing to do"}}
	}
	return answer{status: http.StatusInternalServerError, internal: true, body: errorBody{Error: "internal", Message: "the server failed while handling the request", Hint: "this is a bug or an operational problem: the server log has the error under this request id"}}
}

// conflictBody is the answer to a refused write or setting: its code is the
// conflict's reason ("conflict" for an optimistic write that overlaps
// another, "lineage_mismatch", "stale_serial", "locks_held").
func conflictBody(c *kilolock.ConflictError) errorBody {
	b := errorBody{
		Error:      c.Reason,
		Message:    c.Message,
		Hint:       c.Hint,
		Lineage:    c.Lineage,
		GotLineage: c.GotLineage,
		Addresses:  c.Addresses,
		Winner:     c.Winner,
		Holders:    c.Holders,
	}
	if b.Error == "" {
		b.Error = "conflict"
	}
	if b.Message == "" {
		b.Message = c.Error()
	}
	latest, base := c.LatestSerial, c.BaseSerial
	if c.Reason != kilolock.ReasonLocksHeld { // a setting, not a write: no serial
		b.LatestSerial = &latest
	}
	if base != 0 || c.Reason == kilolock.ReasonWriteConflict {
		b.BaseSerial = &base
	}
	switch {
	case b.Hint != "":
	case c.Reason == kilolock.ReasonLocksHeld:
		b.Hint = fmt.Sprintf("the lock mode changes only while nobody holds a lock: wait for the holders to finish (`kl status %s` lists them), or release a lock that is gone with POST /v1/state-unlock/%s?ID=<lock id>; then try again", c.State, c.State)
	case c.Reason == kilolock.ReasonWriteConflict:
		b.Hint = "nothing was stored: another writer changed these addresses since your lock was taken; run plan and apply again on the current state (`kl conflicts " + c.State + "` shows what happened)"
	default:
		b.Hint = "nothing was stored; pull the state, re-plan and apply again"
	}
	return b
}

// invalidName is the answer to a state path that cannot name a state.
func invalidName(name string) error {
	if err := kilolock.ValidStateName(name); err != nil {
		var ie *kilolock.InvalidError
		if errors.As(err, &ie) {
			ie.Hint += "; a state is one path segment: /v1/states/NAME"
		}
		return err
	}
	return &kilolock.InvalidError{Code: "invalid_state_name", Message: fmt.Sprintf("%q is not a valid state name", name), Hint: "a state is one path segment: /v1/states/NAME"}
}

// isRunHolder reports whether a lock holder stands for an apply run (the
// LockInfo a plain writer meets while a run holds reservations).
func isRunHolder(h kilolock.LockInfo) bool {
	return kilolock.ValidRunID(h.ID) == nil
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown holder"
	}
	return s
}

package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/reserve"
)

// ErrorBody is the JSON body of every error answer of kld. Fields beyond
// error, message and hint appear where they help the client decide what to
// do next. A refused optimistic write (error "conflict") carries exactly
// conflicting_addresses, latest_serial, base_serial and winner besides them.
type ErrorBody struct {
	Error        string              `json:"error"`
	Message      string              `json:"message"`
	Holder       *kilolock.LockInfo  `json:"holder,omitempty"`
	Holders      []kilolock.LockInfo `json:"holders,omitempty"`
	Addresses    []string            `json:"conflicting_addresses,omitempty"`
	LatestSerial *uint64             `json:"latest_serial,omitempty"`
	BaseSerial   *uint64             `json:"base_serial,omitempty"`
	Winner       *kilolock.Winner    `json:"winner,omitempty"`
	Lineage      string              `json:"lineage,omitempty"`
	GotLineage   string              `json:"got_lineage,omitempty"`
	Hint         string              `json:"hint"`
	RequestID    string              `json:"request_id,omitempty"`
	Allow        []string            `json:"allow,omitempty"`
	// Blockers are who holds what a run asked to reserve (423 reserved).
	Blockers []reserve.Blocker `json:"blockers,omitempty"`
	// Run is the apply run an answer is about (409 run_ended).
	Run *kilolock.ApplyRun `json:"run,omitempty"`
	// A quota's refusal (quota_exceeded): the scope that refused, how many
	// managed instances it holds and would hold, its limits and where they
	// come from, and every scope counted.
	Scope     string                `json:"scope,omitempty"`
	Target    string                `json:"target,omitempty"`
	Current   *int64                `json:"current,omitempty"`
	Result    *int64                `json:"result,omitempty"`
	Soft      *int64                `json:"soft,omitempty"`
	Hard      *int64                `json:"hard,omitempty"`
	LimitFrom string                `json:"limit_from,omitempty"`
	Counts    []kilolock.QuotaCount `json:"counts,omitempty"`
	// A pruned version asked for (version_pruned): the run retention
	// pruned it in, and the versions still kept nearest to it.
	Pruned  *kilolock.PrunedRange `json:"pruned,omitempty"`
	Nearest []int64               `json:"nearest,omitempty"`
}

// LockedBody is the protocol routes' 423: the holder's LockInfo as the
// whole body, as Terraform and OpenTofu decode it, with the error fields
// every answer carries beside it.
type LockedBody struct {
	kilolock.LockInfo
	Error     string `json:"error"`
	Message   string `json:"message"`
	Hint      string `json:"hint"`
	RequestID string `json:"request_id,omitempty"`
}

// Error is an error answer of kld. It unwraps to the root package's error
// the answer stands for (*kilolock.LockedError, *kilolock.ConflictError,
// *kilolock.InvalidError, kilolock.ErrNotFound, …), so errors.Is and
// errors.As work across the wire as they do on an Engine.
type Error struct {
	Status int
	Body   ErrorBody
	// RetryAfter is what the server asked to wait before trying again (a
	// 503), zero when it asked nothing.
	RetryAfter time.Duration
	err        error
}

// Error is the server's message, with its hint: what to do next.
func (e *Error) Error() string {
	msg := e.Body.Message
	if msg == "" {
		msg = fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	}
	if e.Body.Hint != "" {
		msg += " (" + e.Body.Hint + ")"
	}
	return msg
}

// Unwrap returns the root package's error the answer stands for.
func (e *Error) Unwrap() error { return e.err }

// Code is the answer's machine-readable code ("locked", "conflict",
// "not_found", …).
func (e *Error) Code() string { return e.Body.Error }

// Hint is what the server says to do next.
func (e *Error) Hint() string { return e.Body.Hint }

// decodeError reads an error answer's body into an *Error. A body that is
// not kld's JSON (a proxy's page) keeps the status and the text.
func decodeError(status int, header http.Header, body []byte, state string) *Error {
	e := &Error{Status: status, RetryAfter: retryAfter(header)}
	if json.Unmarshal(body, &e.Body) != nil || e.Body.Error == "" {
		e.Body = ErrorBody{Error: header.Get("X-Kilolock-Error"), Message: textMessage(status, body)}
	}
	if status == http.StatusLocked && e.Body.Holder == nil {
		// The protocol's 423: the holder is the body itself.
		var lb LockedBody
		if json.Unmarshal(body, &lb) == nil && lb.ID != "" {
			e.Body.Holder = &lb.LockInfo
		}
	}
	e.err = rootError(status, state, &e.Body)
	return e
}

// textMessage says an answer that is not kld's JSON: its status and the
// first line of its text, at most 200 bytes.
func textMessage(status int, body []byte) string {
	text, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	msg := fmt.Sprintf("server answered %d %s", status, http.StatusText(status))
	if text != "" {
		msg += ": " + text
	}
	return msg
}

// rootError is the root package's error an answer stands for: the typed
// error when the answer carries what it needs, else the sentinel.
func rootError(status int, state string, b *ErrorBody) error {
	holder := func() kilolock.LockInfo {
		if b.Holder != nil {
			return *b.Holder
		}
		return kilolock.LockInfo{}
	}
	switch b.Error {
	case "reserved":
		if status == http.StatusLocked {
			return &kilolock.ReservedError{State: state, Blockers: b.Blockers}
		}
	case "run_ended":
		if b.Run != nil {
			return &kilolock.RunEndedError{Run: b.Run}
		}
		return kilolock.ErrConflict
	case "locked", "too_many_holders":
		return &kilolock.LockedError{State: state, Holder: holder()}
	case "lock_mismatch":
		return &kilolock.LockMismatchError{State: state, Holder: holder()}
	case "quota_exceeded":
		qe := &kilolock.QuotaError{State: state, Counts: b.Counts}
		qe.Refused.Scope, qe.Refused.Target, qe.Refused.From = b.Scope, b.Target, b.LimitFrom
		qe.Refused.Current, qe.Refused.Result = deref(b.Current), deref(b.Result)
		qe.Refused.Limit = quota.Limit{Soft: deref(b.Soft), Hard: deref(b.Hard)}
		return qe
	case "token_read_only":
		return &kilolock.ReadOnlyLockError{State: state, Message: b.Message}
	case "read_only":
		return kilolock.ErrReadOnly
	case "state_encrypted":
		return kilolock.ErrEncrypted
	case "stale":
		return kilolock.ErrStale
	case "unavailable":
		return kilolock.ErrUnavailable
	case "encryption_key_missing", "encryption_key_unknown", "encryption_key_wrong":
		return &kilolock.KeyError{Code: b.Error, Message: b.Message, Hint: b.Hint}
	}
	switch status {
	case http.StatusConflict:
		return &kilolock.ConflictError{State: state, Reason: b.Error, Message: b.Message, Hint: b.Hint,
			Addresses: b.Addresses, LatestSerial: deref(b.LatestSerial), BaseSerial: deref(b.BaseSerial),
			Lineage: b.Lineage, GotLineage: b.GotLineage, Winner: b.Winner, Holders: b.Holders}
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return &kilolock.InvalidError{Code: b.Error, Message: b.Message, Hint: b.Hint}
	case http.StatusForbidden:
		return &kilolock.RefusedError{Code: b.Error, Message: b.Message, Hint: b.Hint}
	case http.StatusUnauthorized:
		return &kilolock.RefusedError{Code: b.Error, Message: b.Message, Hint: b.Hint, Err: kilolock.ErrUnauthorized}
	case http.StatusNotFound:
		return &kilolock.ControlError{Err: kilolock.ErrNotFound, Code: b.Error, Message: b.Message, Hint: b.Hint}
	case http.StatusLocked:
		return &kilolock.LockedError{State: state, Holder: holder()}
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusGatewayTimeout:
		return kilolock.ErrUnavailable
	}
	return errors.New(b.Error)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

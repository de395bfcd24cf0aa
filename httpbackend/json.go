package httpbackend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kilolock/kilolock"
)

// writeJSON is the one way a JSON answer is written.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types are written; this is a programming error.
		panic(fmt.Sprintf("httpbackend: encode %T: %v", v, err))
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// decodeJSON decodes a JSON API request body into v, refusing unknown fields
// (so a misspelt setting is an error, not a silent no-op) and trailing data.
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return &kilolock.InvalidError{Code: "malformed_json", Message: "the body has data after its JSON value", Hint: "send exactly one JSON object"}
	}
	return nil
}

// jsonError turns a decoding error into an *InvalidError: unknown fields and
// wrong types are named, so the client knows what to correct.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return &kilolock.InvalidError{Code: "empty_body", Message: "the request body is empty", Hint: "send a JSON object"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &kilolock.InvalidError{Code: "unknown_field", Message: "the body has an " + strings.TrimPrefix(err.Error(), "json: "), Hint: "check the field names against the API (a typo would otherwise be ignored)"}
	case errors.As(err, &syn):
		return &kilolock.InvalidError{Code: "malformed_json", Message: fmt.Sprintf("the body is not valid JSON (at byte %d): %v", syn.Offset, err), Hint: "send a JSON object"}
	case errors.As(err, &typ):
		return &kilolock.InvalidError{Code: "malformed_json", Message: fmt.Sprintf("field %q must be a %s, not %s", typ.Field, typ.Type, typ.Value), Hint: "correct the field's type"}
	}
	return &kilolock.InvalidError{Code: "malformed_json", Message: "the body is not valid JSON: " + err.Error(), Hint: "send a JSON object"}
}

// readBody reads a request body of at most limit bytes. Past the limit it
// answers 413 with a hint naming the server flag that raises it.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	tooLarge := func() error {
		e := &httpError{status: http.StatusRequestEntityTooLarge, code: "body_too_large",
			message: fmt.Sprintf("the request body is larger than the server's limit of %s", ByteSize(limit)),
			hint:    "nothing was stored; an operator can raise the limit with kld --body-limit (KL_BODY_LIMIT), e.g. --body-limit=256MiB"}
		if limit < h.bodyLimit {
			e.hint = "nothing was stored; this endpoint takes a small JSON document"
		}
		return e
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var (
		b   []byte
		err error
	)
	if n := r.ContentLength; n > 0 {
		// The common case: read straight into a buffer of the announced
		// size, then make sure nothing follows.
		b = make([]byte, n)
		if _, err = io.ReadFull(body, b); err == nil {
			var one [1]byte
			if k, _ := body.Read(one[:]); k > 0 {
				err = errors.New("the body is longer than its Content-Length")
			}
		}
	} else {
		b, err = io.ReadAll(body)
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge()
	case err != nil:
		return nil, &httpError{status: http.StatusBadRequest, code: "body_unreadable", message: "the request body could not be read: " + err.Error(), hint: "send the body again; nothing was stored"}
	}
	return b, nil
}

package httpbackend

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
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
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &kilolock.InvalidError{Code: "malformed_json", Message: "the body ends before its JSON value does", Hint: "send a whole JSON object"}
	case errors.As(err, &syn):
		return &kilolock.InvalidError{Code: "malformed_json", Message: fmt.Sprintf("the body is not valid JSON (at byte %d): %v", syn.Offset, err), Hint: "send a JSON object"}
	case errors.As(err, &typ) && typ.Field == "":
		return &kilolock.InvalidError{Code: "malformed_json", Message: fmt.Sprintf("the body must be %s, not %s", jsonKind(typ.Type), typ.Value), Hint: "send a JSON object"}
	case errors.As(err, &typ):
		return &kilolock.InvalidError{Code: "malformed_json", Message: fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value), Hint: "correct the field's type"}
	}
	// What is left is a field's own parser refusing its value (a pattern,
	// a version reference): valid JSON, an invalid value.
	var ie *kilolock.InvalidError
	if errors.As(err, &ie) {
		return ie
	}
	return &kilolock.InvalidError{Code: "invalid_value", Message: "a value in the body is invalid: " + err.Error(), Hint: "correct the value the message names"}
}

// jsonKind names what JSON a Go type decodes from, as a client writes it
// ("a JSON object", "a string"), rather than the Go type's own name.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another JSON value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "a JSON array"
	case reflect.Array:
		return "a JSON array"
	case reflect.Map, reflect.Struct:
		return "a JSON object"
	}
	return "another JSON value"
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

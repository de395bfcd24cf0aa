package main

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/kilolock/kilolock"
)

// outputValue is one root module output as the service returns it. The
// value of a sensitive output is left out.
type outputValue struct {
	Value     json.RawMessage `json:"value,omitempty"`
	Type      json.RawMessage `json:"type,omitempty"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

// outputsBody is the answer of GET /outputs/{name}.
type outputsBody struct {
	State   string                 `json:"state"`
	Version int64                  `json:"version"`
	Serial  uint64                 `json:"serial"`
	Outputs map[string]outputValue `json:"outputs"`
}

// outputsHandler serves GET /outputs/{name}: the outputs of the state's
// current version, read through the Engine (no HTTP round trip, no parsing
// of the whole state: the Engine keeps the parsed current version cached).
func outputsHandler(e *kilolock.Engine) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		g, v, err := e.Graph(r.Context(), name)
		switch {
		case errors.Is(err, kilolock.ErrNotFound):
			writeError(w, http.StatusNotFound, "not_found", "state "+name+" does not exist or has no version yet", "apply a configuration whose backend points at this service first")
			return
		case errors.Is(err, kilolock.ErrInvalid):
			writeError(w, http.StatusBadRequest, "invalid_state_name", err.Error(), "")
			return
		case errors.Is(err, kilolock.ErrEncrypted):
			writeError(w, http.StatusConflict, "state_encrypted", err.Error(), "read the outputs with tofu output, which can decrypt the state")
			return
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, "unavailable", "cannot read the state", "retry later")
			return
		}
		body := outputsBody{State: name, Version: v.Number, Serial: v.Serial, Outputs: map[string]outputValue{}}
		for _, o := range g.Outputs {
			var out outputValue
			if err := json.Unmarshal(o.Object, &out); err != nil {
				writeError(w, http.StatusInternalServerError, "internal", "output "+o.Name+" cannot be read", "")
				return
			}
			if out.Sensitive {
				out.Value = nil
			}
			body.Outputs[o.Name] = out
		}
		writeJSON(w, http.StatusOK, body)
	})
}

// writeJSON is the service's one JSON writer.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the shape KiloLock's own handler uses, so clients
// read one error format from the whole service.
func writeError(w http.ResponseWriter, status int, code, message, hint string) {
	writeJSON(w, status, map[string]string{"error": code, "message": message, "hint": hint})
}

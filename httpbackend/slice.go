package httpbackend

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// noVersionYet is the 404 of a state read before its first write, which
// both CLIs read as an empty state.
func noVersionYet(name string) error {
	return &httpError{status: http.StatusNotFound, code: "state_not_found",
		message: fmt.Sprintf("state %q has no version yet", name),
		hint:    "terraform and tofu read this as an empty state and create it on their first write; `kl states` lists the existing states"}
}

// getOutputs answers GET /v1/states/{name}/outputs: the current version
// with its outputs and no resources, for a terraform_remote_state whose
// http backend address ends in /outputs.
func (h *Handler) getOutputs(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	doc, err := h.engine.Outputs(r.Context(), name)
	if errors.Is(err, kilolock.ErrNotFound) {
		return noVersionYet(name)
	}
	if err != nil {
		return err
	}
	servePart(w, r, doc)
	return nil
}

// servePart writes a document made for one request (a slice, the outputs)
// with its version's headers. It is not the version's document, so it has
// no ETag of its own.
func servePart(w http.ResponseWriter, r *http.Request, doc *kilolock.Document) {
	hdr := w.Header()
	setVersionHeaders(hdr, &doc.Version)
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store") // state holds secrets
	hdr.Set("Content-Length", strconv.Itoa(len(doc.Bytes)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(doc.Bytes)
	}
}

// addressesParam returns the repeated address parameter, refusing none.
func addressesParam(r *http.Request, example string) ([]string, error) {
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, &kilolock.InvalidError{Code: "parameter_missing", Message: "the request has no address parameter",
			Hint: "name one or more instances or resources: " + example}
	}
	return addrs, nil
}

// sliceState answers GET /v1/api/states/{name}/slice?address=…&cone=…&ref=:
// a state file of those instances and their cone (dependencies unless
// cone says dependents or none), every output, the same lineage and serial.
func (h *Handler) sliceState(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref, err := versionRef(q.Get("ref"))
	if err != nil {
		return err
	}
	cone, err := history.ParseSliceCone(q.Get("cone"))
	if err != nil {
		return err
	}
	addrs, err := addressesParam(r, "?address=aws_instance.web&cone=dependencies")
	if err != nil {
		return err
	}
	doc, err := history.Slice(r.Context(), h.engine, r.PathValue("name"), ref, addrs, cone)
	if err != nil {
		return err
	}
	servePart(w, r, doc)
	return nil
}

// stateGraph answers GET /v1/api/states/{name}/graph?address=…&direction=
// dependents|dependencies&depth=N&ref=: the cone of those instances
// (their dependents unless direction says otherwise, every edge away
// unless depth bounds it).
func (h *Handler) stateGraph(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	ref, err := versionRef(q.Get("ref"))
	if err != nil {
		return err
	}
	dir := history.Dependents
	if d := q.Get("direction"); d != "" {
		if err := dir.UnmarshalText([]byte(d)); err != nil {
			return &kilolock.InvalidError{Code: "invalid_direction", Message: err.Error(),
				Hint: "use direction=dependents (what rests on the instances, the default) or direction=dependencies (what they rest on)"}
		}
	}
	depth, err := intParam(q.Get("depth"), "depth", 0, 1<<30)
	if err != nil {
		return err
	}
	addrs, err := addressesParam(r, "?address=aws_instance.web&direction=dependents")
	if err != nil {
		return err
	}
	view, err := history.Cone(r.Context(), h.engine, r.PathValue("name"), ref, addrs, dir, int(depth))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

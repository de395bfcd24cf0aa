package httpbackend

import (
	"net/http"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
)

// TagRequest is the wire type the client shares.
type TagRequest = client.TagRequest

// listTags answers GET /v1/api/states/{name}/tags.
func (h *Handler) listTags(w http.ResponseWriter, r *http.Request) error {
	tags, err := history.Tags(r.Context(), h.engine, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.TagList{Tags: tags})
	return nil
}

// putTag answers PUT /v1/api/states/{name}/tags/{tag}: the tag now names
// the version ref resolves to.
func (h *Handler) putTag(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var q TagRequest
	if err := decodeJSON(body, &q); err != nil {
		return err
	}
	ref, err := versionRef(q.Ref)
	if err != nil {
		return err
	}
	t, err := history.SetTag(r.Context(), h.engine, r.PathValue("name"), r.PathValue("tag"), ref, history.TagOptions{By: caller(r), Description: q.Description})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, t)
	return nil
}

// deleteTag answers DELETE /v1/api/states/{name}/tags/{tag}.
func (h *Handler) deleteTag(w http.ResponseWriter, r *http.Request) error {
	if err := history.UnsetTag(r.Context(), h.engine, r.PathValue("name"), r.PathValue("tag"), history.TagOptions{By: caller(r)}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.OK{OK: true})
	return nil
}

// listDrift answers GET /v1/api/states/{name}/drift with the open drift.
func (h *Handler) listDrift(w http.ResponseWriter, r *http.Request) error {
	drift, err := drift.Drift(r.Context(), h.engine, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.DriftList{Drift: drift})
	return nil
}

// recordDrift answers POST /v1/api/states/{name}/drift: the body is a
// drift.DriftReport, the answer the check recorded.
func (h *Handler) recordDrift(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, h.bodyLimit)
	if err != nil {
		return err
	}
	var rep drift.DriftReport
	if err := decodeJSON(body, &rep); err != nil {
		return err
	}
	c, err := drift.RecordDrift(r.Context(), h.engine, r.PathValue("name"), &rep, caller(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// acceptRefresh answers POST /v1/api/states/{name}/refresh: the body is
// the refreshed state of a refresh-only plan, written as a version of
// source refresh (kilolock.Engine.AcceptRefresh). The answer's version is
// null when the refresh changed nothing.
func (h *Handler) acceptRefresh(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, h.bodyLimit)
	if err != nil {
		return err
	}
	by := caller(r).Actor
	if info(r).inProcess {
		by = actor(r) // a version names the client's actor, as AsOperator says
	}
	v, err := drift.AcceptRefresh(r.Context(), h.engine, r.PathValue("name"), body, by)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.RefreshAnswer{Version: v})
	return nil
}

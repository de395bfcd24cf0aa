package httpbackend

import (
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// maxRejectionsLimit bounds one answer of GET …/rejections.
const maxRejectionsLimit = 1000

// listRejections answers GET /v1/api/states/{name}/rejections?limit=N with
// the state's refused commits, newest first: what a client that shows only
// "HTTP error: 409" was refused for. limit 0 or absent means the engine's
// default (50).
func (h *Handler) listRejections(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r.URL.Query().Get("limit"), "limit", 0, maxRejectionsLimit)
	if err != nil {
		return err
	}
	rs, err := history.Rejections(r.Context(), h.engine, r.PathValue("name"), int(limit))
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []kilolock.Rejection{}
	}
	writeJSON(w, http.StatusOK, client.RejectionList{Rejections: rs})
	return nil
}

package httpbackend

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/tenancy"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
)

// maxHistoryLimit bounds one page of GET …/versions.
const maxHistoryLimit = 1000

// listStates answers GET /v1/api/states.
func (h *Handler) listStates(w http.ResponseWriter, r *http.Request) error {
	states, err := h.engine.Store().States(r.Context())
	if err != nil {
		return err
	}
	if states == nil {
		states = []kilolock.State{}
	}
	writeJSON(w, http.StatusOK, client.StateList{States: states})
	return nil
}

// stateStatus answers GET /v1/api/states/{name} with the state's summary.
func (h *Handler) stateStatus(w http.ResponseWriter, r *http.Request) error {
	st, err := h.engine.Status(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// listVersions answers GET /v1/api/states/{name}/versions?limit=N&before=M,
// newest first.
func (h *Handler) listVersions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), "limit", 0, maxHistoryLimit)
	if err != nil {
		return err
	}
	before, err := intParam(q.Get("before"), "before", 0, 1<<62)
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	versions, err := h.engine.History(r.Context(), name, kilolock.HistoryOptions{Limit: int(limit), Before: before})
	if err != nil {
		return err
	}
	// The current version too, so that a page of history needs no status
	// (a status reads the current version's graph).
	st, err := h.engine.Store().State(r.Context(), name)
	if err != nil {
		return err
	}
	if versions == nil {
		versions = []kilolock.Version{}
	}
	writeJSON(w, http.StatusOK, client.VersionList{Current: st.Current, Versions: versions})
	return nil
}

// getVersion answers GET /v1/api/states/{name}/versions/{number} with that
// version's state document.
func (h *Handler) getVersion(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := kilolock.ValidStateName(name); err != nil {
		return err
	}
	n, err := intParam(r.PathValue("number"), "version number", 1, 1<<62)
	if err != nil {
		return err
	}
	body, err := h.engine.OpenVersion(r.Context(), name, n)
	if err != nil {
		return err
	}
	return h.serveBody(w, r, body)
}

type queryRequest = client.QueryRequest

// query answers POST /v1/api/query with the result of a read-only query.
func (h *Handler) query(w http.ResponseWriter, r *http.Request) error {
	body, err := h.readBody(r, lockBodyLimit)
	if err != nil {
		return err
	}
	var q queryRequest
	if err := decodeJSON(body, &q); err != nil {
		return err
	}
	if strings.TrimSpace(q.SQL) == "" {
		return &kilolock.InvalidError{Code: "empty_query", Message: `the query has no "sql"`, Hint: `send {"sql": "SELECT …"}`}
	}
	done, err := h.queries.enter(r)
	if err != nil {
		return err
	}
	defer done()
	var res *kilolock.QueryResult
	if scope := info(r).scope; scope != nil {
		res, err = tenancy.QueryScoped(r.Context(), h.engine, *scope, q.SQL)
	} else {
		res, err = h.engine.Query(r.Context(), q.SQL)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// intParam parses an integer parameter in [lo, hi]; empty means 0.
func intParam(s, what string, lo, hi int64) (int64, error) {
	if s == "" && lo == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, &kilolock.InvalidError{Code: "invalid_parameter", Message: fmt.Sprintf("%s %q is not a whole number from %d to %d", what, s, lo, hi), Hint: "correct the parameter"}
	}
	return n, nil
}

package httpbackend

import (
	"fmt"
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/inventory"
)

// The inventory across states (package inventory): GET /v1/api/search
// answers an inventory.Page, GET /v1/api/search/duplicates an
// inventory.DuplicateList. The operator searches every state; an
// automation token or a PAT the states of its environments, as for its
// SQL (authorize).

func (h *Handler) searchRoutes() {
	h.api("GET /v1/api/search", h.search)
	h.api("GET /v1/api/search/duplicates", h.duplicates)
}

// isSearch reports whether path is one of the search routes, which a
// tenant's credential may call with its scope.
func isSearch(path string) bool {
	return path == "/v1/api/search" || path == "/v1/api/search/duplicates"
}

// inventoryStore is the engine's store as an inventory.Store.
func (h *Handler) inventoryStore() (inventory.Store, error) {
	is, ok := h.engine.Store().(inventory.Store)
	if !ok {
		return nil, &kilolock.RefusedError{Code: "search_unsupported", Message: "this store cannot search across states", Hint: "use the SQLite or PostgreSQL store", Err: kilolock.ErrReadOnly}
	}
	return is, nil
}

// search answers GET /v1/api/search with a page of hits.
func (h *Handler) search(w http.ResponseWriter, r *http.Request) error {
	is, err := h.inventoryStore()
	if err != nil {
		return err
	}
	f, err := inventory.FiltersOf(r.URL.Query())
	if err != nil {
		return err
	}
	q, err := inventory.ParseQuery(f)
	if err != nil {
		return err
	}
	q.Scope = info(r).scope
	page, err := inventory.Search(r.Context(), is, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// duplicates answers GET /v1/api/search/duplicates[?type=T].
func (h *Handler) duplicates(w http.ResponseWriter, r *http.Request) error {
	is, err := h.inventoryStore()
	if err != nil {
		return err
	}
	typ := ""
	for name, vs := range r.URL.Query() {
		if name != "type" || len(vs) > 1 {
			return &kilolock.InvalidError{Code: "invalid_parameter", Message: fmt.Sprintf("duplicates take one parameter, type; not %q (given %d times)", name, len(vs)), Hint: "list every duplicate, or those of one resource type with ?type=T"}
		}
		typ = vs[0]
	}
	dups, err := inventory.Duplicates(r.Context(), is, info(r).scope, typ)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, inventory.DuplicateList{Duplicates: dups})
	return nil
}

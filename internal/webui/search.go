package webui

import (
	"net/http"
	"sort"

	"github.com/kilolock/kilolock/history"
)

// searchData is the search page.
type searchData struct {
	Name, Label string
	Query       history.SearchQuery
	// Types are the resource types of the current version, for the form.
	Types  []string
	Result *history.SearchResult
}

// search serves GET /ui/states/{name}/search?type=&name=&address=&text=:
// the instances of the current version that match, sensitive values never
// matched (the engine searches masked attributes).
func (u *UI) search(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	name := r.PathValue("name")
	if err := u.readable(r, v, name); err != nil {
		return nil, err
	}
	qs := r.URL.Query()
	q := history.SearchQuery{Type: qs.Get("type"), Name: qs.Get("name"), Address: qs.Get("address"), Text: qs.Get("text"), Limit: maxListed}
	for field, s := range map[string]string{"type": q.Type, "name": q.Name, "address": q.Address, "text": q.Text} {
		if len(s) > 1024 {
			return nil, badParam(field, "longer than 1024 bytes", "search for a shorter text")
		}
	}
	ctx := r.Context()
	st, err := u.engine.Status(ctx, name)
	if err != nil {
		return nil, err
	}
	d := searchData{Name: name, Label: v.label(name), Query: q}
	for _, tc := range st.Types {
		d.Types = append(d.Types, tc.Type)
	}
	sort.Strings(d.Types)
	if d.Result, err = history.Search(ctx, u.engine, name, q); err != nil {
		return nil, err
	}
	return &view{Template: "search", Title: "Search " + d.Label, Crumbs: []crumb{{d.Label, stateURL(name)}, {Label: "search"}}, Data: d}, nil
}

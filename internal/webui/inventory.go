package webui

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/tenancy"
)

// The inventory across states (package inventory): /ui/search finds
// instances in every state the viewer reads, /ui/duplicates lists the
// objects more than one of them records. Sensitive values are never
// matched nor shown.

// hitRow is a hit as the page shows it.
type hitRow struct {
	inventory.Hit
	Label string // the state as the viewer names it
}

// inventorySearchData is the search page across states.
type inventorySearchData struct {
	Filters  inventory.Filters
	Attr     string // the form's one PATH=VALUE (more only in the URL)
	Searched bool
	Hits     []hitRow
	// Next is the URL of the next page; "" on the last.
	Next string
}

// inventoryStore is the engine's store as an inventory.Store.
func (u *UI) inventoryStore() (inventory.Store, error) {
	is, ok := u.engine.Store().(inventory.Store)
	if !ok {
		return nil, &problemError{Problem{Status: http.StatusNotImplemented, Code: "search_unsupported", Message: "this store cannot search across states", Hint: "use the SQLite or PostgreSQL store"}}
	}
	return is, nil
}

// scopeOf is what v may search: a gated viewer's environments; nil (every
// state, of which the page keeps the local ones) without a gate.
func scopeOf(v *visit) *tenancy.QueryScope {
	if !v.Gated {
		return nil
	}
	s := tenancy.QueryScope{Prefixes: []string{}}
	if v.Viewer != nil {
		for _, e := range v.Viewer.Environments {
			s.Prefixes = append(s.Prefixes, e.prefix())
		}
	}
	return &s
}

// shown reports whether v sees state name: without a gate, the local
// lane's states only, as everywhere in the web view.
func shown(v *visit, name string) bool {
	return v.Gated || tenancy.LocalStateName(name) == nil
}

// inventorySearch serves GET /ui/search?type=&address=&attr=&text=&state=&data=&cursor=.
func (u *UI) inventorySearch(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	is, err := u.inventoryStore()
	if err != nil {
		return nil, err
	}
	qs := r.URL.Query()
	// An empty field of the form is no filter.
	for k, vs := range qs {
		if len(vs) == 1 && strings.TrimSpace(vs[0]) == "" {
			delete(qs, k)
		}
	}
	f, err := inventory.FiltersOf(qs)
	if err != nil {
		return nil, err
	}
	d := inventorySearchData{Filters: f, Searched: len(qs) > 0, Hits: []hitRow{}}
	if len(f.Attr) > 0 {
		d.Attr = f.Attr[0]
	}
	if d.Searched {
		f.Limit = maxListed
		q, err := inventory.ParseQuery(f)
		if err != nil {
			return nil, err
		}
		q.Scope = scopeOf(v)
		page, err := inventory.Search(r.Context(), is, q)
		if err != nil {
			return nil, err
		}
		for _, h := range page.Hits {
			if shown(v, h.State) {
				d.Hits = append(d.Hits, hitRow{Hit: h, Label: v.label(h.State)})
			}
		}
		if page.Next != "" {
			next := url.Values{}
			for k, vs := range qs {
				next[k] = vs
			}
			next.Set("cursor", page.Next)
			d.Next = Prefix + "search?" + next.Encode()
		}
	}
	return &view{Template: "inventory", Title: "Search across states", Crumbs: []crumb{{Label: "search"}}, Data: d}, nil
}

// duplicatesData is the duplicates page.
type duplicatesData struct {
	Type       string
	Duplicates []duplicateRow
}

type duplicateRow struct {
	inventory.Duplicate
	Labels []string // the states of Objects as the viewer names them
}

// duplicates serves GET /ui/duplicates?type=.
func (u *UI) duplicates(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	is, err := u.inventoryStore()
	if err != nil {
		return nil, err
	}
	typ := r.URL.Query().Get("type")
	if len(typ) > 1024 {
		return nil, badParam("type", "longer than 1024 bytes", "give a resource type, as in aws_s3_bucket")
	}
	dups, err := inventory.Duplicates(r.Context(), is, scopeOf(v), typ)
	if err != nil {
		return nil, err
	}
	d := duplicatesData{Type: typ, Duplicates: []duplicateRow{}}
	for _, dup := range dups {
		row := duplicateRow{Duplicate: dup}
		row.Objects = nil
		for _, o := range dup.Objects {
			if shown(v, o.State) {
				row.Objects = append(row.Objects, o)
				row.Labels = append(row.Labels, v.label(o.State))
			}
		}
		if len(row.Objects) > 1 {
			d.Duplicates = append(d.Duplicates, row)
		}
	}
	return &view{Template: "duplicates", Title: "Objects managed twice", Crumbs: []crumb{{Label: "duplicates"}}, Data: d}, nil
}

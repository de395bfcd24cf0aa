package webui

import (
	"net/http"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
)

// maxListed bounds the addresses one list of a page shows; the page says
// how many more there are.
const maxListed = 1000

// diffData is the diff page.
type diffData struct {
	Name, Label string
	From, To    string
	Diff        *history.StateDiff
	// Cut lists are the diff's lists cut to maxListed, and how many were
	// left out of each.
	Added, Removed []string
	Changed        []history.InstanceDiff
	MoreAdded      int
	MoreRemoved    int
	MoreChanged    int
	// Identical says, for a diff of encrypted versions (Diff.Opaque),
	// that both documents are the same bytes.
	Identical bool
}

// diff serves GET /ui/states/{name}/diff?from=@N&to=@M: what turns one
// version into another, by address and attribute path, sensitive values
// masked by the engine.
func (u *UI) diff(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	name := r.PathValue("name")
	if err := u.readable(r, v, name); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	fromS, toS := q.Get("from"), q.Get("to")
	if fromS == "" {
		fromS = "@-1"
	}
	if toS == "" {
		toS = "@latest"
	}
	from, err := kilolock.ParseVersionRef(fromS)
	if err != nil {
		return nil, err
	}
	to, err := kilolock.ParseVersionRef(toS)
	if err != nil {
		return nil, err
	}
	sd, err := history.Diff(r.Context(), u.engine, name, from, to)
	if err != nil {
		return nil, err
	}
	d := diffData{Name: name, Label: v.label(name), From: fromS, To: toS, Diff: sd, Identical: sd.Identical != nil && *sd.Identical}
	d.Added, d.MoreAdded = cut(sd.Added)
	d.Removed, d.MoreRemoved = cut(sd.Removed)
	d.Changed, d.MoreChanged = cut(sd.Changed)
	return &view{Template: "diff", Title: "Diff " + d.Label, Crumbs: []crumb{{d.Label, stateURL(name)}, {Label: "diff"}}, Data: d}, nil
}

// cut returns the first maxListed of s and how many it left out.
func cut[T any](s []T) ([]T, int) {
	if len(s) <= maxListed {
		return s, 0
	}
	return s[:maxListed], len(s) - maxListed
}

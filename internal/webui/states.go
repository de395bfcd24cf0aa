package webui

import (
	"net/http"
	"sort"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/tenancy"
)

// stateRow is one line of the states page.
type stateRow struct {
	Name, Label string
	Info        kilolock.State
	Version     *kilolock.Version
	// Drift is the drifted instance count; nil when unknown.
	Drift *int
}

// statesData is the states page.
type statesData struct {
	Rows      []stateRow
	ShowDrift bool
}

// visibleStates lists the states v sees, by label.
func (u *UI) visibleStates(r *http.Request, v *visit) ([]kilolock.State, error) {
	all, err := u.engine.States(r.Context())
	if err != nil {
		return nil, err
	}
	var out []kilolock.State
	for _, st := range all {
		if u.sees(v, st.Name) {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return v.label(out[i].Name) < v.label(out[j].Name) })
	return out, nil
}

// sees reports whether a state belongs to what v reaches: a local state
// without a Gate, a state of one of the viewer's environments with one
// (the Gate decided on each environment when it made the Viewer).
func (u *UI) sees(v *visit, name string) bool {
	if !v.Gated {
		return tenancy.LocalStateName(name) == nil
	}
	if v.Viewer == nil {
		return false
	}
	for _, s := range v.Viewer.Environments {
		if strings.HasPrefix(name, s.prefix()) {
			return true
		}
	}
	return false
}

// states serves GET /ui/: every state the viewer sees, with its current
// version, lock mode and holders.
func (u *UI) states(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	sts, err := u.visibleStates(r, v)
	if err != nil {
		return nil, err
	}
	d := statesData{Rows: make([]stateRow, 0, len(sts))}
	names := make([]string, 0, len(sts))
	for _, st := range sts {
		row := stateRow{Name: st.Name, Label: v.label(st.Name), Info: st}
		if st.Current > 0 {
			vs, err := u.engine.History(r.Context(), st.Name, kilolock.HistoryOptions{Limit: 1})
			if err != nil {
				return nil, err
			}
			if len(vs) > 0 {
				row.Version = &vs[0]
			}
		}
		d.Rows = append(d.Rows, row)
		names = append(names, st.Name)
	}
	if f := u.o.Extras.DriftCounts; f != nil {
		counts, err := f(r.Context(), names)
		if err != nil {
			return nil, err
		}
		d.ShowDrift = true
		for i := range d.Rows {
			if n, ok := counts[d.Rows[i].Name]; ok {
				d.Rows[i].Drift = &n
			}
		}
	}
	return &view{Template: "states", Title: "States", Data: d}, nil
}

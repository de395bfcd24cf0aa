package webui

import (
	"net/http"
	"strconv"

	"github.com/kilolock/kilolock/history"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// maxDrawn bounds the nodes the graph page draws; a larger cone is cut at
// the deepest layers, and the page says so.
const maxDrawn = 600

// graphData is the dependency cone page.
type graphData struct {
	Name, Label, Address string
	Direction            string
	Depth                int
	Version              *kilolock.Version
	Drawing              *drawing
	Total, Drawn         int
}

// graph serves GET /ui/states/{name}/graph?address=&direction=&depth=: the
// dependency cone of an instance or resource in the current version, laid
// out on the server as SVG.
func (u *UI) graph(w http.ResponseWriter, r *http.Request, v *visit) (*view, error) {
	name, address, err := u.addressOf(r, v)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	d := graphData{Name: name, Label: v.label(name), Address: address, Direction: q.Get("direction")}
	if d.Direction == "" {
		d.Direction = "dependencies"
	}
	dir, err := graph.ParseDirection(d.Direction)
	if err != nil {
		return nil, badParam("direction", err.Error(), "use direction=dependencies (what it rests on) or direction=dependents (what rests on it)")
	}
	if s := q.Get("depth"); s != "" {
		if d.Depth, err = strconv.Atoi(s); err != nil || d.Depth < 0 || d.Depth > 1000 {
			return nil, badParam("depth", strconv.Quote(s)+" is not a depth", "use depth=N, 0 for no bound, at most 1000")
		}
	}
	cv, err := history.Cone(r.Context(), u.engine, name, kilolock.Latest, []string{address}, dir, d.Depth)
	if err != nil {
		return nil, err
	}
	cone := &graph.Cone{Direction: cv.Direction, Nodes: cv.Nodes, Edges: cv.Edges}
	d.Version, d.Total = &cv.Version, len(cone.Nodes)
	if len(cone.Nodes) > maxDrawn {
		cone = truncate(cone, maxDrawn)
	}
	d.Drawn = len(cone.Nodes)
	d.Drawing = layOut(cone)
	return &view{Template: "graph", Title: "Cone of " + address, Crumbs: []crumb{{d.Label, stateURL(name)}, {address, instanceURL(name, address)}, {Label: "graph"}}, Data: d}, nil
}

// truncate keeps the first n nodes of c (they are ordered by depth) and
// the edges between them.
func truncate(c *graph.Cone, n int) *graph.Cone {
	out := &graph.Cone{Direction: c.Direction, Nodes: c.Nodes[:n]}
	kept := make(map[string]bool, n)
	for _, nd := range out.Nodes {
		kept[nd.ID] = true
	}
	for _, e := range c.Edges {
		if kept[e.From] && kept[e.To] {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

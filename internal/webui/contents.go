package webui

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
)

// treeListed is how many instances of one type of one module the state
// page lists; the rest are a count and a link to the search.
const treeListed = 50

// moduleNode is a module of the state page's tree of contents: its
// instances by type.
type moduleNode struct {
	Module string // "" for the root module
	Count  int
	Types  []typeNode
}

// typeNode is a resource type within a module, and its instances.
type typeNode struct {
	Type      string
	Count     int
	Instances []history.InstanceSummary
	More      int
}

// outputRow is an output of the state page: its value as JSON, or
// SensitiveMask when Terraform marks it sensitive.
type outputRow struct {
	Name      string
	Sensitive bool
	Value     string
}

// currentGraph is the current version's graph of state name; nil for a
// client-side encrypted state, or one with no version.
func (u *UI) currentGraph(ctx context.Context, name string) (*graph.State, error) {
	g, _, err := u.engine.Graph(ctx, name)
	if errors.Is(err, kilolock.ErrEncrypted) || errors.Is(err, kilolock.ErrNotFound) {
		return nil, nil
	}
	return g, err
}

// outputs are g's outputs in its order, sensitive values masked.
func outputs(g *graph.State) []outputRow {
	out := make([]outputRow, 0, len(g.Outputs))
	for _, o := range g.Outputs {
		obj := o.Object
		masked, sensitive := graph.MaskedOutputObject(obj)
		if sensitive {
			obj = masked
		}
		var v struct {
			Value json.RawMessage `json:"value"`
		}
		row := outputRow{Name: o.Name, Sensitive: sensitive, Value: graph.SensitiveMask}
		if json.Unmarshal(obj, &v) == nil && !sensitive {
			row.Value = short(200, string(v.Value))
		}
		out = append(out, row)
	}
	return out
}

// contents is the tree of what g holds: modules, in each the types, in
// each the instances (treeListed at most).
func contents(g *graph.State) []moduleNode {
	// The tree counts every instance but lists only a few of each type:
	// walk the graph and summarize just those.
	modules := map[string]*moduleNode{}
	types := map[[2]string]*typeNode{}
	for i := range g.Instances {
		in := &g.Instances[i]
		m := modules[in.Resource.Module]
		if m == nil {
			m = &moduleNode{Module: in.Resource.Module}
			modules[in.Resource.Module] = m
		}
		m.Count++
		typ := in.Resource.Type
		if in.Resource.Mode == "data" {
			typ = "data." + typ
		}
		k := [2]string{in.Resource.Module, typ}
		tn := types[k]
		if tn == nil {
			tn = &typeNode{Type: typ}
			types[k] = tn
		}
		tn.Count++
		if len(tn.Instances) < treeListed {
			tn.Instances = append(tn.Instances, history.Summarize(in))
		} else {
			tn.More++
		}
	}
	for k, tn := range types {
		modules[k[0]].Types = append(modules[k[0]].Types, *tn)
	}
	out := make([]moduleNode, 0, len(modules))
	for _, m := range modules {
		sort.Slice(m.Types, func(i, j int) bool { return m.Types[i].Type < m.Types[j].Type })
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Module < out[j].Module })
	return out
}

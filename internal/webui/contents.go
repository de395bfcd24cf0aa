package webui

import (
	"context"
	"errors"
	"sort"

	"github.com/kilolock/kilolock"
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

// contents is the tree of what the current version of state name holds:
// modules, in each the types, in each the instances (treeListed at most).
// A client-side encrypted state, or one with no version, has none.
func (u *UI) contents(ctx context.Context, name string) ([]moduleNode, error) {
	// The tree counts every instance but lists only a few of each type:
	// walk the graph and summarize just those.
	g, _, err := u.engine.Graph(ctx, name)
	if errors.Is(err, kilolock.ErrEncrypted) || errors.Is(err, kilolock.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
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
	return out, nil
}

package kilolock

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock/graph"
)

// Direction says which way a cone follows dependency edges: Dependencies
// (what instances rest on) or Dependents (their blast radius).
type Direction = graph.Direction

// Directions of a cone.
const (
	Dependencies = graph.Dependencies
	Dependents   = graph.Dependents
)

// ConeNode is one instance object of a cone and its distance in edges from
// the instances asked for.
type ConeNode = graph.ConeNode

// ConeEdge says instance From depends on instance To.
type ConeEdge = graph.ConeEdge

// ConeView is the dependency cone of some instances in one version of a
// state: what `kl graph` shows.
type ConeView struct {
	State   string  `json:"state"`
	Version Version `json:"version"`
	// Addresses are the instances and resources asked for, spelled
	// canonically.
	Addresses []string  `json:"addresses"`
	Direction Direction `json:"direction"`
	// Depth bounds the edges followed; 0 follows them all.
	Depth int `json:"depth"`
	// Nodes are ordered by depth, then ID; Edges by From, then To. Neither
	// is nil.
	Nodes []ConeNode `json:"nodes"`
	Edges []ConeEdge `json:"edges"`
}

// Cone returns the instances reachable from those at addresses (instance
// or resource addresses) in version ref of a state, following dir at most
// depth edges (0: no bound), from the dependencies the CLI recorded. For
// the current version the dependency index is built once and cached with
// its graph, so a cone costs what it visits; an older version is indexed
// for the call. An *InvalidError for no address, an address that does not
// parse (invalid_address) or that the version does not hold
// (unknown_address), or a negative depth; ErrEncrypted for a client-side
// encrypted version; see ResolveVersion for the rest.
func (e *Engine) Cone(ctx context.Context, name string, ref VersionRef, addresses []string, dir Direction, depth int) (*ConeView, error) {
	if depth < 0 {
		return nil, &InvalidError{Code: "invalid_depth", Message: fmt.Sprintf("depth %d is negative", depth), Hint: "give the most edges to follow, or 0 to follow them all"}
	}
	d, _, x, err := e.depGraph(ctx, name, ref)
	if err != nil {
		return nil, err
	}
	canon, _, err := lookup(x, name, &d.Version, addresses)
	if err != nil {
		return nil, err
	}
	c, err := x.Cone(canon, dir, depth)
	if err != nil {
		return nil, err // lookup found every address
	}
	view := &ConeView{State: name, Version: d.Version, Addresses: canon, Direction: dir, Depth: depth, Nodes: c.Nodes, Edges: c.Edges}
	if view.Edges == nil {
		view.Edges = []ConeEdge{}
	}
	return view, nil
}

// SliceCone says what a slice holds beside the instances asked for.
type SliceCone string

// What a slice holds.
const (
	// SliceDependencies adds what the instances rest on, transitively:
	// what a plan scoped to them reads.
	SliceDependencies SliceCone = "dependencies"
	// SliceDependents adds what rests on them: their blast radius.
	SliceDependents SliceCone = "dependents"
	// SliceNone holds the instances asked for and nothing else.
	SliceNone SliceCone = "none"
)

// ParseSliceCone reads "dependencies", "dependents" or "none"; "" is
// SliceDependencies. Anything else is an *InvalidError (invalid_cone).
func ParseSliceCone(s string) (SliceCone, error) {
	switch c := SliceCone(s); c {
	case "":
		return SliceDependencies, nil
	case SliceDependencies, SliceDependents, SliceNone:
		return c, nil
	}
	return "", &InvalidError{Code: "invalid_cone", Message: fmt.Sprintf("cone %q is not one of dependencies, dependents or none", s),
		Hint: "use cone=dependencies (what the instances rest on, the default), cone=dependents (what rests on them) or cone=none (only them)"}
}

// Slice returns version ref of a state holding only the instances at
// addresses (instance or resource addresses) and, as cone says, those they
// rest on or that rest on them; with every output, the same lineage,
// serial and Terraform version, rendered in the layout of the state's own
// writer: a valid tfstate for a plan scoped to those instances. For the
// current version its cost is that of the slice, not of the state, once
// the version's dependency index is cached (see Cone). Errors as for Cone.
func (e *Engine) Slice(ctx context.Context, name string, ref VersionRef, addresses []string, cone SliceCone) (*Document, error) {
	if _, err := ParseSliceCone(string(cone)); err != nil {
		return nil, err
	}
	d, g, x, err := e.depGraph(ctx, name, ref)
	if err != nil {
		return nil, err
	}
	canon, idx, err := lookup(x, name, &d.Version, addresses)
	if err != nil {
		return nil, err
	}
	if cone != SliceNone {
		dir := Dependencies
		if cone == SliceDependents {
			dir = Dependents
		}
		c, err := x.Cone(canon, dir, 0)
		if err != nil {
			return nil, err
		}
		idx = c.Indexes
	}
	s := g.Slice(idx)
	return &Document{Version: d.Version, Bytes: s.Render(s.Format)}, nil
}

// Outputs returns the current version of a state as a state document with
// its outputs and no resources: the same lineage, serial and Terraform
// version, and no check results (they name resources). Sensitive outputs
// keep their values, marked sensitive, as terraform_remote_state needs
// them. Its cost is that of the outputs when the version is cached.
// ErrNotFound when the state has no version; ErrEncrypted when it is
// client-side encrypted.
func (e *Engine) Outputs(ctx context.Context, name string) (*Document, error) {
	ent, err := e.currentOf(ctx, name, false)
	if err != nil {
		return nil, err
	}
	index, err := ent.lean()
	if err != nil {
		return nil, err
	}
	if index == nil {
		return nil, encryptedError(name)
	}
	s := index.Slice(nil)
	s.CheckResults = nil
	return &Document{Version: ent.version, Bytes: s.Render(s.Format)}, nil
}

// depGraph returns version ref of a state with its graph's dependency
// index: the current version's cached with it, an older one's built for
// the call.
func (e *Engine) depGraph(ctx context.Context, name string, ref VersionRef) (*Body, *graph.State, *graph.DepIndex, error) {
	var ent *cacheEntry
	if ref.Kind == RefLatest {
		// One cheap read when the version is cached: no more than a GET.
		var err error
		if ent, err = e.currentEntry(ctx, name); err != nil {
			return nil, nil, nil, err
		}
	} else {
		st, err := e.State(ctx, name)
		if err != nil {
			return nil, nil, nil, err
		}
		v, err := e.Resolve(ctx, st, ref)
		if err != nil {
			return nil, nil, nil, err
		}
		if v.Number == st.Current {
			ent, err = e.loadEntry(ctx, st)
		} else {
			d, g, err := e.VersionGraph(ctx, st, VersionRef{Kind: RefNumber, N: uint64(v.Number)})
			if err != nil {
				return nil, nil, nil, err
			}
			return d, g, graph.NewDepIndex(g), nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	g, err := e.fullGraph(ctx, ent)
	if err != nil {
		return nil, nil, nil, err
	}
	if g == nil {
		return nil, nil, nil, encryptedError(name)
	}
	return ent.body, g, e.cache.depIndex(ent, g), nil
}

// lookup spells addresses canonically and finds them in x: an
// *InvalidError when there are none, when one does not parse, or naming
// every one that version v does not hold.
func lookup(x *graph.DepIndex, name string, v *Version, addresses []string) (canon []string, indexes []int, err error) {
	hint := "addresses look like `aws_instance.web`, `aws_instance.web[0]`, `module.demo.aws_instance.web[\"k\"]`; `kl state list " + name + "` shows them"
	if len(addresses) == 0 {
		return nil, nil, &InvalidError{Code: "address_missing", Message: "no address was given", Hint: "name at least one instance or resource: " + hint}
	}
	canon = make([]string, len(addresses))
	var unknown []string
	for i, a := range addresses {
		if x.Holds(a) {
			canon[i] = a // spelled as the state does: no need to parse it
			continue
		}
		p, err := graph.ParseAddress(a)
		if err != nil {
			return nil, nil, &InvalidError{Code: "invalid_address", Message: fmt.Sprintf("address %q: %v", a, err), Hint: hint}
		}
		if canon[i] = p.String(); !x.Holds(canon[i]) {
			unknown = append(unknown, canon[i])
		}
	}
	if len(unknown) > 0 {
		return nil, nil, &InvalidError{Code: "unknown_address",
			Message: fmt.Sprintf("version @%d of state %s holds nothing at %s", v.Number, name, strings.Join(unknown, ", ")), Hint: hint}
	}
	indexes, _ = x.Lookup(canon)
	return canon, indexes, nil
}

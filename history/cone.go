package history

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"

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
	State   string           `json:"state"`
	Version kilolock.Version `json:"version"`
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
func Cone(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef, addresses []string, dir Direction, depth int) (*ConeView, error) {
	if depth < 0 {
		return nil, &kilolock.InvalidError{Code: "invalid_depth", Message: fmt.Sprintf("depth %d is negative", depth), Hint: "give the most edges to follow, or 0 to follow them all"}
	}
	d, _, x, err := e.DepGraph(ctx, name, ref)
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
	return "", &kilolock.InvalidError{Code: "invalid_cone", Message: fmt.Sprintf("cone %q is not one of dependencies, dependents or none", s),
		Hint: "use cone=dependencies (what the instances rest on, the default), cone=dependents (what rests on them) or cone=none (only them)"}
}

// Slice returns version ref of a state holding only the instances at
// addresses (instance or resource addresses) and, as cone says, those they
// rest on or that rest on them; with every output, the same lineage,
// serial and Terraform version, rendered in the layout of the state's own
// writer: a valid tfstate for a plan scoped to those instances. For the
// current version its cost is that of the slice, not of the state, once
// the version's dependency index is cached (see Cone). Errors as for Cone.
func Slice(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef, addresses []string, cone SliceCone) (*kilolock.Document, error) {
	if _, err := ParseSliceCone(string(cone)); err != nil {
		return nil, err
	}
	d, g, x, err := e.DepGraph(ctx, name, ref)
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
	return &kilolock.Document{Version: d.Version, Bytes: s.Render(s.Format)}, nil
}

// lookup spells addresses canonically and finds them in x: an
// *InvalidError when there are none, when one does not parse, or naming
// every one that version v does not hold.
func lookup(x *graph.DepIndex, name string, v *kilolock.Version, addresses []string) (canon []string, indexes []int, err error) {
	hint := "addresses look like `aws_instance.web`, `aws_instance.web[0]`, `module.demo.aws_instance.web[\"k\"]`; `kl state list " + name + "` shows them"
	if len(addresses) == 0 {
		return nil, nil, &kilolock.InvalidError{Code: "address_missing", Message: "no address was given", Hint: "name at least one instance or resource: " + hint}
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
			return nil, nil, &kilolock.InvalidError{Code: "invalid_address", Message: fmt.Sprintf("address %q: %v", a, err), Hint: hint}
		}
		if canon[i] = p.String(); !x.Holds(canon[i]) {
			unknown = append(unknown, canon[i])
		}
	}
	if len(unknown) > 0 {
		return nil, nil, &kilolock.InvalidError{Code: "unknown_address",
			Message: fmt.Sprintf("version @%d of state %s holds nothing at %s", v.Number, name, strings.Join(unknown, ", ")), Hint: hint}
	}
	indexes, _ = x.Lookup(canon)
	return canon, indexes, nil
}

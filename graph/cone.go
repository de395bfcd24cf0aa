package graph

import (
	"fmt"
	"slices"
	"strings"
)

// ConfigAddress returns the resource's address as Terraform records
// dependencies: every index key of the module path dropped,
// `module.a.aws_instance.web`.
func (r Resource) ConfigAddress() string {
	if strings.Contains(r.Module, "[") {
		if steps, err := ParseModulePath(r.Module); err == nil {
			mods := make([]string, len(steps))
			for i, m := range steps {
				mods[i] = "module." + m.Name
			}
			r.Module = strings.Join(mods, ".")
		}
	}
	return r.Address()
}

// Direction says which way a cone follows dependency edges.
type Direction int

const (
	// Dependencies follows what an instance rests on.
	Dependencies Direction = iota
	// Dependents follows what rests on an instance: its blast radius.
	Dependents
)

// ParseDirection reads "dependencies" or "dependents".
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "dependencies":
		return Dependencies, nil
	case "dependents":
		return Dependents, nil
	}
	return 0, fmt.Errorf("direction %q: want dependencies or dependents", s)
}

// String returns "dependencies" or "dependents".
func (d Direction) String() string {
	if d == Dependents {
		return "dependents"
	}
	return "dependencies"
}

// MarshalText encodes d as its String.
func (d Direction) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads d with ParseDirection.
func (d *Direction) UnmarshalText(b []byte) error {
	v, err := ParseDirection(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// DepIndex holds the dependency edges of one state for cone queries. Build
// it once per state (NewDepIndex is O(state)); each Cone then costs what
// it visits.
type DepIndex struct {
	s *State
	// byConfig lists the instances of each config address.
	byConfig map[string][]int
	// dependents lists, for each config address, the instances that
	// depend on it.
	dependents map[string][]int
	// byAddress lists the instances at each instance address (current and
	// deposed objects), and byResource those of each resource address.
	byAddress, byResource map[string][]int
	config                []string // config address of each instance
	bytes                 int64
}

// Per-entry costs of a DepIndex, for Bytes: a map entry (key header, slice
// header, bucket share) and a slice element.
const (
	mapEntryBytes = 64
	indexBytes    = 8
)

// NewDepIndex indexes s's dependency edges. s must not change afterwards.
func NewDepIndex(s *State) *DepIndex {
	x := &DepIndex{s: s, byConfig: map[string][]int{}, dependents: map[string][]int{}, byAddress: map[string][]int{}, byResource: map[string][]int{}, config: make([]string, len(s.Instances))}
	for i := range s.Instances {
		in := &s.Instances[i]
		ca := in.Resource.ConfigAddress()
		x.config[i] = ca
		x.byConfig[ca] = append(x.byConfig[ca], i)
		x.byAddress[in.Address()] = append(x.byAddress[in.Address()], i)
		x.byResource[in.Resource.Address()] = append(x.byResource[in.Resource.Address()], i)
		for _, d := range in.Dependencies {
			x.dependents[d] = append(x.dependents[d], i)
		}
		// Three new strings (the config, instance and resource
		// addresses), an entry or element in each map, one per edge.
		x.bytes += int64(len(ca)+2*len(in.Resource.Address())+len(in.Key.String())) + 4*(mapEntryBytes+indexBytes) +
			int64(len(in.Dependencies))*(mapEntryBytes+indexBytes)
	}
	return x
}

// Bytes estimates the memory x holds beyond the state it indexes, for a
// cache's budget.
func (x *DepIndex) Bytes() int64 { return x.bytes }

// Holds reports whether address, an instance or resource address spelled
// canonically, names anything in the state.
func (x *DepIndex) Holds(address string) bool {
	return len(x.byAddress[address]) > 0 || len(x.byResource[address]) > 0
}

// Lookup returns the positions in the state's Instances of what addresses
// name (an instance address names its current and deposed objects, a
// resource address all its instances), each once and in the order found,
// and the addresses that name nothing. Its cost is what it finds.
func (x *DepIndex) Lookup(addresses []string) (indexes []int, unknown []string) {
	seen := map[int]bool{}
	for _, a := range addresses {
		idx := x.byAddress[a]
		if len(idx) == 0 {
			idx = x.byResource[a]
		}
		if len(idx) == 0 {
			unknown = append(unknown, a)
			continue
		}
		for _, i := range idx {
			if !seen[i] {
				seen[i] = true
				indexes = append(indexes, i)
			}
		}
	}
	return indexes, unknown
}

// ConeNode is one instance object of a cone, Depth edges from its start
// (0 for the instances asked for).
type ConeNode struct {
	ID      string `json:"id"` // Instance.ID
	Address string `json:"address"`
	Type    string `json:"type"`
	Depth   int    `json:"depth"`
}

// ConeEdge says instance From depends on instance To.
type ConeEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Cone is the instances reachable from a start set, and the edges between
// them that were followed.
type Cone struct {
	Direction Direction  `json:"-"`
	Nodes     []ConeNode `json:"nodes"`
	Edges     []ConeEdge `json:"edges"`
	// Indexes are the nodes' positions in the state's Instances, in the
	// order of Nodes.
	Indexes []int `json:"-"`
}

// Cone returns the instances reachable from those at addresses (instance
// or resource addresses) following dir, at most depth edges away (0 or
// less: no bound). An address that names nothing in the state is an error.
// Nodes are ordered by depth, then ID; edges by From, then To.
func (x *DepIndex) Cone(addresses []string, dir Direction, depth int) (*Cone, error) {
	frontier, unknown := x.Lookup(addresses)
	if len(unknown) > 0 {
		return nil, fmt.Errorf("the state holds nothing at %s", strings.Join(unknown, ", "))
	}
	dist := make(map[int]int, len(frontier))
	for _, i := range frontier {
		dist[i] = 0
	}
	type edge struct{ from, to int }
	edges := map[edge]bool{}
	for d := 1; len(frontier) > 0 && (depth <= 0 || d <= depth); d++ {
		var next []int
		for _, i := range frontier {
			var nbrs []int
			if dir == Dependencies {
				for _, dep := range x.s.Instances[i].Dependencies {
					nbrs = append(nbrs, x.byConfig[dep]...)
				}
			} else {
				nbrs = x.dependents[x.config[i]]
			}
			for _, j := range nbrs {
				if j == i {
					continue
				}
				if dir == Dependencies {
					edges[edge{i, j}] = true
				} else {
					edges[edge{j, i}] = true
				}
				if _, ok := dist[j]; !ok {
					dist[j] = d
					next = append(next, j)
				}
			}
		}
		frontier = next
	}
	c := &Cone{Direction: dir}
	for i := range dist {
		c.Indexes = append(c.Indexes, i)
	}
	ins := x.s.Instances
	slices.SortFunc(c.Indexes, func(a, b int) int {
		if dist[a] != dist[b] {
			return dist[a] - dist[b]
		}
		return strings.Compare(ins[a].ID(), ins[b].ID())
	})
	for _, i := range c.Indexes {
		c.Nodes = append(c.Nodes, ConeNode{ID: ins[i].ID(), Address: ins[i].Address(), Type: ins[i].Resource.Type, Depth: dist[i]})
	}
	for e := range edges {
		if _, ok := dist[e.from]; !ok {
			continue
		}
		if _, ok := dist[e.to]; !ok {
			continue
		}
		c.Edges = append(c.Edges, ConeEdge{From: ins[e.from].ID(), To: ins[e.to].ID()})
	}
	slices.SortFunc(c.Edges, func(a, b ConeEdge) int {
		if a.From != b.From {
			return strings.Compare(a.From, b.From)
		}
		return strings.Compare(a.To, b.To)
	})
	return c, nil
}

// Slice returns a state holding only the instances at indexes (positions
// in s.Instances), every output, and s's lineage, serial and version: a
// valid tfstate for a scoped plan. Instances keep their order.
func (s *State) Slice(indexes []int) *State {
	keep := slices.Clone(indexes)
	slices.Sort(keep)
	out := *s
	out.Instances = make([]Instance, 0, len(keep))
	for _, i := range slices.Compact(keep) {
		out.Instances = append(out.Instances, s.Instances[i])
	}
	return &out
}

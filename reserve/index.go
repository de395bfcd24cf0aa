package reserve

import (
	"github.com/kilolock/kilolock/graph"
)

// Index holds reservations so that the ones meeting a pattern are found
// in time proportional to the pattern's depth and what it meets, not to
// how many are held: a tree of module steps, with the reservations on
// resources and instances at the node of their module path.
//
// The zero Index is empty and ready to use. An Index is not safe for
// concurrent writes.
type Index struct {
	root    node
	outputs map[string][]Hold
	n       int
}

type node struct {
	// children by module call name: the step without a key (every
	// instance of the call) and the steps with one.
	children map[string]*calls
	// open are the holds of `<this path>.*`.
	open []Hold
	// resources by "type.name" (or "data.type.name").
	resources map[string]*keyed
}

type calls struct {
	any   *node
	byKey map[graph.IndexKey]*node
}

type keyed struct {
	any   []Hold // the whole resource
	byKey map[graph.IndexKey][]Hold
}

// NewIndex returns an Index holding hs.
func NewIndex(hs []Hold) *Index {
	x := &Index{}
	for _, h := range hs {
		x.Add(h)
	}
	return x
}

// Len returns the number of holds added.
func (x *Index) Len() int { return x.n }

// Add adds a hold.
func (x *Index) Add(h Hold) {
	p := h.Pattern
	x.n++
	switch {
	case p.all:
		x.root.open = append(x.root.open, h)
		return
	case p.output != "":
		if x.outputs == nil {
			x.outputs = map[string][]Hold{}
		}
		x.outputs[p.output] = append(x.outputs[p.output], h)
		return
	}
	n := &x.root
	for _, m := range p.modules {
		if n.children == nil {
			n.children = map[string]*calls{}
		}
		c := n.children[m.Name]
		if c == nil {
			c = &calls{}
			n.children[m.Name] = c
		}
		if !m.HasKey {
			if c.any == nil {
				c.any = &node{}
			}
			n = c.any
			continue
		}
		if c.byKey == nil {
			c.byKey = map[graph.IndexKey]*node{}
		}
		next := c.byKey[m.Key]
		if next == nil {
			next = &node{}
			c.byKey[m.Key] = next
		}
		n = next
	}
	if p.open {
		n.open = append(n.open, h)
		return
	}
	if n.resources == nil {
		n.resources = map[string]*keyed{}
	}
	k := n.resources[p.res]
	if k == nil {
		k = &keyed{}
		n.resources[p.res] = k
	}
	if !p.hasKey {
		k.any = append(k.any, h)
		return
	}
	if k.byKey == nil {
		k.byKey = map[graph.IndexKey][]Hold{}
	}
	k.byKey[p.key] = append(k.byKey[p.key], h)
}

// Meeting calls fn for every hold whose pattern intersects p, until fn
// returns false. A hold is reported once.
func (x *Index) Meeting(p Pattern, fn func(Hold) bool) {
	w := walker{fn: fn}
	switch {
	case p.all:
		w.subtree(&x.root)
		for _, hs := range x.outputs {
			if !w.emit(hs) {
				return
			}
		}
		return
	case p.output != "":
		if w.emit(x.root.open) {
			w.emit(x.outputs[p.output])
		}
		return
	}
	w.path(&x.root, p, 0)
}

type walker struct {
	fn   func(Hold) bool
	stop bool
}

func (w *walker) emit(hs []Hold) bool {
	for _, h := range hs {
		if w.stop {
			return false
		}
		if !w.fn(h) {
			w.stop = true
		}
	}
	return !w.stop
}

// path visits what p (a module-scoped pattern) meets below n, whose
// module path is p's first depth steps.
func (w *walker) path(n *node, p Pattern, depth int) {
	// Everything under this path meets p, which is under it too.
	if !w.emit(n.open) {
		return
	}
	if depth == len(p.modules) {
		if p.open {
			w.below(n)
			return
		}
		k := n.resources[p.res]
		if k == nil {
			return
		}
		if !w.emit(k.any) {
			return
		}
		if !p.hasKey {
			for _, hs := range k.byKey {
				if !w.emit(hs) {
					return
				}
			}
			return
		}
		w.emit(k.byKey[p.key])
		return
	}
	m := p.modules[depth]
	c := n.children[m.Name]
	if c == nil {
		return
	}
	if c.any != nil {
		w.path(c.any, p, depth+1)
	}
	if m.HasKey {
		if next := c.byKey[m.Key]; next != nil {
			w.path(next, p, depth+1)
		}
		return
	}
	for _, next := range c.byKey {
		if w.stop {
			return
		}
		w.path(next, p, depth+1)
	}
}

// subtree visits every hold at n and below.
func (w *walker) subtree(n *node) {
	if w.emit(n.open) {
		w.below(n)
	}
}

// below visits every hold below n, n's own open holds excepted.
func (w *walker) below(n *node) {
	for _, k := range n.resources {
		if !w.emit(k.any) {
			return
		}
		for _, hs := range k.byKey {
			if !w.emit(hs) {
				return
			}
		}
	}
	for _, c := range n.children {
		if c.any != nil {
			w.subtree(c.any)
		}
		for _, next := range c.byKey {
			if w.stop {
				return
			}
			w.subtree(next)
		}
	}
}

// Blockers returns, for each wanted reservation in order, the holds that
// conflict with it, skipping those of run self (a run never blocks
// itself; "" skips nothing).
func (x *Index) Blockers(wanted []Reservation, self string) []Blocker {
	var out []Blocker
	for _, r := range wanted {
		x.Meeting(r.Pattern, func(h Hold) bool {
			if (self == "" || h.Run != self) && h.Reservation.Conflicts(r) {
				out = append(out, Blocker{Hold: h, Wanted: r})
			}
			return true
		})
	}
	return out
}

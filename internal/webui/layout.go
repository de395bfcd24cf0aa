package webui

import (
	"fmt"
	"github.com/kilolock/kilolock/graph"
	"hash/fnv"
	"sort"
)

// Geometry of the drawn cone, in SVG user units (pixels).
const (
	nodeWidth     = 280
	nodeHeight    = 24
	rowGap        = 8
	columnGap     = 90
	margin        = 16
	labelChars    = 40
	orderingSweep = 4
)

// drawnNode is a node of the cone, placed.
type drawnNode struct {
	ID, Address, Type, Label string
	Depth                    int
	X, Y                     int
	Fill                     string
	Start                    bool
}

// drawnEdge is a cubic path from a node to one it depends on.
type drawnEdge struct {
	From, To string
	Path     string
}

// drawing is a laid-out cone.
type drawing struct {
	Width, Height int
	// NodeWidth and NodeHeight are every node's box.
	NodeWidth, NodeHeight int
	Nodes                 []drawnNode
	Edges                 []drawnEdge
}

// layOut places a cone in layers, as a layered (Sugiyama-style) drawing:
// one column per depth from the start, left to right. Within a column,
// nodes are ordered by the mean position of their neighbours in the
// columns beside it (a few barycentre sweeps, down and up), which keeps
// most edges short and uncrossed; ties keep the cone's order (by ID).
func layOut(c *graph.Cone) *drawing {
	layers := map[int][]int{} // depth -> node indexes
	maxDepth := 0
	for i, n := range c.Nodes {
		layers[n.Depth] = append(layers[n.Depth], i)
		maxDepth = max(maxDepth, n.Depth)
	}
	index := make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		index[n.ID] = i
	}
	nbrs := make([][]int, len(c.Nodes))
	for _, e := range c.Edges {
		a, b := index[e.From], index[e.To]
		nbrs[a] = append(nbrs[a], b)
		nbrs[b] = append(nbrs[b], a)
	}
	pos := make([]float64, len(c.Nodes)) // position within its layer
	for _, l := range layers {
		for k, i := range l {
			pos[i] = float64(k)
		}
	}
	reorder := func(d, from int) {
		l := layers[d]
		key := make(map[int]float64, len(l))
		for _, i := range l {
			sum, n := 0.0, 0
			for _, j := range nbrs[i] {
				if c.Nodes[j].Depth == from {
					sum += pos[j]
					n++
				}
			}
			key[i] = pos[i]
			if n > 0 {
				key[i] = sum / float64(n)
			}
		}
		sort.SliceStable(l, func(a, b int) bool { return key[l[a]] < key[l[b]] })
		for k, i := range l {
			pos[i] = float64(k)
		}
	}
	for s := 0; s < orderingSweep; s++ {
		if s%2 == 0 {
			for d := 1; d <= maxDepth; d++ {
				reorder(d, d-1)
			}
		} else {
			for d := maxDepth - 1; d >= 0; d-- {
				reorder(d, d+1)
			}
		}
	}

	// Rows: the largest layer is stacked top to bottom; every other layer,
	// from the largest outwards, puts each node at the mean row of its
	// neighbours in the layer already placed, pushed down just enough to
	// keep its order and the gap between boxes.
	big := 0
	for d := 0; d <= maxDepth; d++ {
		if len(layers[d]) > len(layers[big]) {
			big = d
		}
	}
	y := make([]float64, len(c.Nodes))
	place := func(d, from int) {
		next := 0.0
		for _, i := range layers[d] {
			want, sum, n := next, 0.0, 0
			for _, j := range nbrs[i] {
				if c.Nodes[j].Depth == from {
					sum += y[j]
					n++
				}
			}
			if n > 0 {
				want = max(next, sum/float64(n))
			}
			y[i] = want
			next = want + 1
		}
	}
	place(big, -1)
	for d := big - 1; d >= 0; d-- {
		place(d, d+1)
	}
	for d := big + 1; d <= maxDepth; d++ {
		place(d, d-1)
	}

	dr := &drawing{Nodes: make([]drawnNode, len(c.Nodes)), NodeWidth: nodeWidth, NodeHeight: nodeHeight}
	rows := 0.0
	for i, n := range c.Nodes {
		x := margin + n.Depth*(nodeWidth+columnGap)
		yy := margin + int(y[i]*float64(nodeHeight+rowGap))
		dr.Nodes[i] = drawnNode{ID: n.ID, Address: n.Address, Type: n.Type, Label: short(labelChars, n.ID), Depth: n.Depth, X: x, Y: yy, Fill: typeColor(n.Type), Start: n.Depth == 0}
		rows = max(rows, y[i]+1)
	}
	dr.Width = 2*margin + (maxDepth+1)*(nodeWidth+columnGap) - columnGap
	dr.Height = 2*margin + int(rows*float64(nodeHeight+rowGap)) - rowGap
	for _, e := range c.Edges {
		a, b := dr.Nodes[index[e.From]], dr.Nodes[index[e.To]]
		dr.Edges = append(dr.Edges, drawnEdge{From: e.From, To: e.To, Path: edgePath(a, b)})
	}
	return dr
}

// edgePath joins the facing sides of two nodes with a cubic curve.
func edgePath(a, b drawnNode) string {
	ay, by := a.Y+nodeHeight/2, b.Y+nodeHeight/2
	ax, bx := a.X+nodeWidth, b.X
	if b.X < a.X {
		ax, bx = a.X, b.X+nodeWidth
	} else if b.X == a.X { // same column: loop out on the right
		ax, bx = a.X+nodeWidth, b.X+nodeWidth
		return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", ax, ay, ax+columnGap/2, ay, bx+columnGap/2, by, bx, by)
	}
	mid := (ax + bx) / 2
	return fmt.Sprintf("M%d %d C%d %d %d %d %d %d", ax, ay, mid, ay, mid, by, bx, by)
}

// typeColor gives each resource type a stable light fill.
func typeColor(t string) string {
	h := fnv.New32a()
	h.Write([]byte(t))
	return fmt.Sprintf("hsl(%d, 70%%, 88%%)", h.Sum32()%360)
}

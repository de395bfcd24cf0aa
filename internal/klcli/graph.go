package klcli

import (
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// Graph formats of kl graph.
const (
	GraphTable = "table"
	GraphJSON  = "json"
	GraphDOT   = "dot"
)

// Graph prints the cone of addresses in version ref of a state: a table
// (by depth), JSON, or a Graphviz digraph whose arrows point from an
// instance to what it depends on.
func (c *CLI) Graph(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, dir history.Direction, depth int, format string) error {
	if format == "" {
		format = GraphTable
		if c.JSON {
			format = GraphJSON
		}
	}
	if format != GraphTable && format != GraphJSON && format != GraphDOT {
		return &UsageError{Message: fmt.Sprintf("format %q is not table, json or dot", format), Hint: "use --format table, --format json or --format dot"}
	}
	v, err := c.api().Cone(ctx, name, addresses, client.ConeOptions{Ref: ref.String(), Direction: dir, Depth: depth})
	if err != nil {
		return err
	}
	switch format {
	case GraphJSON:
		return c.writeJSON(v)
	case GraphDOT:
		return c.writeDOT(v)
	}
	reach := "every edge away"
	if v.Depth > 0 {
		reach = "at most " + plural(v.Depth, "edge", "edges") + " away"
	}
	what := "Dependents"
	if v.Direction == history.Dependencies {
		what = "Dependencies"
	}
	fmt.Fprintf(c.Out, "%s of %s in state %s %s, %s:\n", what, cell(strings.Join(v.Addresses, ", ")), v.State, versionText(&v.Version), reach)
	w := c.table()
	row(w, "DEPTH", "ADDRESS", "TYPE")
	for _, n := range v.Nodes {
		row(w, fmt.Sprint(n.Depth), cell(n.ID), cell(n.Type))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.Out, "%s, %s.\n", plural(len(v.Nodes), "instance", "instances"), plural(len(v.Edges), "edge", "edges"))
	return err
}

// writeDOT writes a cone as a Graphviz digraph: the instances asked for
// drawn bold, an arrow from each instance to what it depends on.
func (c *CLI) writeDOT(v *history.ConeView) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n  rankdir=LR;\n  node [shape=box];\n", dotQuote(v.State+" "+versionText(&v.Version)))
	for _, n := range v.Nodes {
		style := ""
		if n.Depth == 0 {
			style = ", style=bold"
		}
		fmt.Fprintf(&b, "  %s [label=%s%s];\n", dotQuote(n.ID), dotQuote(n.ID+"\n"+n.Type), style)
	}
	for _, e := range v.Edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(e.From), dotQuote(e.To))
	}
	b.WriteString("}\n")
	_, err := c.Out.Write([]byte(b.String()))
	return err
}

// dotQuote quotes s as a DOT string: backslashes and quotes escaped, a
// newline as \n (a line break in a label).
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(s) + `"`
}

// PullSlice writes a slice of version ref of a state to Documents as a state
// file: the instances at addresses with their cone, every output, the same
// lineage and serial.
func (c *CLI) PullSlice(ctx context.Context, name string, ref kilolock.VersionRef, addresses []string, cone history.SliceCone) error {
	doc, err := readAll(c.api().Slice(transfer(ctx), name, ref.String(), addresses, cone))
	if err != nil {
		return err
	}
	_, err = c.documents().Write(doc)
	return err
}

// GraphCmd is kl graph.
type GraphCmd struct {
	Name         string   `arg:"" help:"State name."`
	Address      []string `required:"" sep:"none" help:"Where the cone starts (repeat the flag for more): an instance or a resource with all its instances." placeholder:"ADDR"`
	Dependents   bool     `xor:"direction" help:"Follow what rests on the instances: their blast radius (the default)."`
	Dependencies bool     `xor:"direction" help:"Follow what the instances rest on."`
	Depth        int      `help:"Follow at most N edges (default: all)." placeholder:"N"`
	Ref          string   `arg:"" optional:"" help:"Version: ${version_ref}"`
	VersionFlag
	Format string `help:"table, json, or dot (Graphviz: an arrow from each instance to what it depends on)." default:"table" enum:"table,json,dot"`
}

// Run runs the command.
func (c *GraphCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	if c.Depth < 0 {
		return &UsageError{Message: fmt.Sprintf("--depth %d is negative", c.Depth), Hint: "give the most edges to follow, or leave --depth out to follow them all"}
	}
	dir := history.Dependents
	if c.Dependencies {
		dir = history.Dependencies
	}
	return g.with(ctx, false, func(cli *CLI) error { return cli.Graph(ctx, c.Name, ref, c.Address, dir, c.Depth, c.Format) })
}

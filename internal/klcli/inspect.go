package klcli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
)

// ShowCmd is kl show.
type ShowCmd struct {
	stateArg
	Ref string `arg:"" optional:"" help:"Version: ${version_ref}"`
	VersionFlag
	Address string `help:"Show this instance's attributes, sensitive values masked." placeholder:"ADDR"`
}

// Run runs the command.
func (c *ShowCmd) Run(ctx context.Context, g *Globals) error {
	ref, err := versionRef(c.Ref, c.Version)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Show(ctx, c.Name, ref, c.Address) })
}

// DiffCmd is kl diff.
type DiffCmd struct {
	stateArg
	From string `arg:"" help:"The older version: ${version_ref}"`
	To   string `arg:"" optional:"" help:"The newer version (default latest)."`
}

// Run runs the command.
func (c *DiffCmd) Run(ctx context.Context, g *Globals) error {
	from, err := refArg(c.From)
	if err != nil {
		return err
	}
	to, err := refArg(c.To)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Diff(ctx, c.Name, from, to) })
}

// versionText names a version for people: "@3 (serial 3)".
func versionText(v *kilolock.Version) string {
	return fmt.Sprintf("@%d (serial %d)", v.Number, v.Serial)
}

// Diff prints what turns version from of a state into version to: by
// address, and for changed instances and outputs by attribute path, with
// sensitive values masked.
func (c *CLI) Diff(ctx context.Context, name string, from, to kilolock.VersionRef) error {
	d, err := c.api().Diff(ctx, name, from.String(), to.String())
	if err != nil {
		return err
	}
	return c.show(d, func() error {
		fmt.Fprintf(c.Out, "State %s: %s → %s\n", d.State, versionText(&d.From), versionText(&d.To))
		if d.Opaque {
			verdict := "differ"
			if d.Identical != nil && *d.Identical {
				verdict = "are identical"
			}
			_, err := fmt.Fprintf(c.Out, "  @%d or @%d is client-side encrypted: compared as whole documents, they %s; what changed in them cannot be listed.\n",
				d.From.Number, d.To.Number, verdict)
			return err
		}
		d.ChangeSet.WriteText(c.Out, history.DiffVerbs)
		return nil
	})
}

// AddressHistoryJSON is the JSON output of AddressHistory.
type AddressHistoryJSON struct {
	State   string                  `json:"state"`
	Address string                  `json:"address"`
	Changes []history.AddressChange `json:"changes"`
}

// AddressHistory lists every version that added, changed or removed the
// instance (or any instance of the resource) at address, newest first,
// with what changed.
func (c *CLI) AddressHistory(ctx context.Context, name, address string) error {
	l, err := c.api().AddressHistory(ctx, name, address)
	if err != nil {
		return err
	}
	cs := l.Changes
	return c.show(AddressHistoryJSON{State: name, Address: address, Changes: cs}, func() error {
		fmt.Fprintf(c.Out, "History of %s in state %s, newest first:\n", address, name)
		marks := map[string]string{"added": "+", "changed": "~", "removed": "-"}
		last := int64(-1)
		for _, ch := range cs {
			v := &ch.Version
			if v.Number != last {
				last = v.Number
				fmt.Fprintf(c.Out, "\n@%d  serial %d  %s  %s by %s  lock %s\n", v.Number, v.Serial, formatTime(v.Created),
					orDash(v.SourceText()), orDash(v.Actor), orDash(v.LockID))
			}
			fmt.Fprintf(c.Out, "  %s %s %s\n", marks[ch.Kind], cell(ch.Address), ch.Kind)
			history.WriteAttributeChanges(c.Out, "      ", ch.Changes)
		}
		return nil
	})
}

// Show prints a version's summary and its instances and outputs; with an
// address, that one instance's attributes instead, sensitive values
// masked.
func (c *CLI) Show(ctx context.Context, name string, ref kilolock.VersionRef, address string) error {
	if address != "" {
		return c.showInstance(ctx, name, ref, address)
	}
	v, err := c.api().Show(ctx, name, ref.String())
	if err != nil {
		return err
	}
	return c.show(v, func() error {
		current := ""
		if v.Current {
			current = ", the current version"
		}
		ver := &v.Version
		fmt.Fprintf(c.Out, "State %s %s%s\n", ver.State, versionText(ver), current)
		fmt.Fprintf(c.Out, "Created %s by %s (%s), lock %s; +%d ~%d -%d\n", formatTime(ver.Created), orDash(ver.Actor), orDash(ver.SourceText()),
			orDash(ver.LockID), ver.Added, ver.Changed, ver.Removed)
		fmt.Fprintf(c.Out, "\n%s:\n", plural(len(v.Instances), "instance", "instances"))
		if err := writeTable(c, v.Instances, []string{"ADDRESS", "TYPE", "STATUS"}, func(in history.InstanceSummary) []string {
			return []string{cell(in.ID), cell(in.Type), orDash(in.Status)}
		}); err != nil {
			return err
		}
		if len(v.Outputs) > 0 {
			fmt.Fprintf(c.Out, "\n%s:\n", plural(len(v.Outputs), "output", "outputs"))
			for _, o := range v.Outputs {
				s := ""
				if o.Sensitive {
					s = " (sensitive)"
				}
				fmt.Fprintf(c.Out, "  %s%s\n", cell(o.Name), s)
			}
		}
		return nil
	})
}

func (c *CLI) showInstance(ctx context.Context, name string, ref kilolock.VersionRef, address string) error {
	in, err := c.api().ShowInstance(ctx, name, ref.String(), address)
	if err != nil {
		return err
	}
	return c.show(in, func() error {
		fmt.Fprintf(c.Out, "%s in state %s %s\n", in.ID, in.Version.State, versionText(&in.Version))
		fmt.Fprintf(c.Out, "provider: %s\n", in.Provider)
		if in.Status != "" {
			fmt.Fprintf(c.Out, "status: %s\n", in.Status)
		}
		deps := "-"
		if len(in.Dependencies) > 0 {
			deps = strings.Join(in.Dependencies, ", ")
		}
		fmt.Fprintf(c.Out, "dependencies: %s\n", deps)
		attrs, err := json.MarshalIndent(in.Attributes, "", "  ")
		if err != nil {
			return err
		}
		return c.printf("attributes: %s\n", attrs)
	})
}

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
	if err := writeTable(c, v.Nodes, []string{"DEPTH", "ADDRESS", "TYPE"}, func(n history.ConeNode) []string {
		return []string{fmt.Sprint(n.Depth), cell(n.ID), cell(n.Type)}
	}); err != nil {
		return err
	}
	return c.printf("%s, %s.\n", plural(len(v.Nodes), "instance", "instances"), plural(len(v.Edges), "edge", "edges"))
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

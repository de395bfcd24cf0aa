package klcli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/kilolock/kilolock/inventory"
)

// SearchCmd is kl search.
type SearchCmd struct {
	JSONFlag
	Type       string   `help:"Resource type, matched exactly (aws_instance)." placeholder:"TYPE"`
	Address    string   `help:"Address pattern, as reservations take them: an instance (aws_instance.web[0]), a resource (aws_instance.web), a module (module.net.*)." placeholder:"PATTERN"`
	Attr       []string `help:"PATH=VALUE: the attribute at the dotted PATH (tags.Name, ingress.0.from_port) is VALUE; repeat for more, all must hold." placeholder:"PATH=VALUE" sep:"none"`
	Text       string   `help:"Part of an attribute's name or value, without regard to case (of three characters or more, found through an index); sensitive values are never matched." placeholder:"TEXT"`
	State      string   `help:"State name pattern, * matching any run of characters (a tenant's states also by their name within the environment)." placeholder:"PATTERN"`
	Limit      int      `help:"Most hits shown; kl reads as many pages as it takes." default:"100"`
	Data       bool     `help:"Find data sources too."`
	Duplicates bool     `help:"List the objects more than one state records (same type and identity, ARN, self_link or id), with every state and address; only --type narrows it."`
}

// Run runs the command.
func (c *SearchCmd) Run(ctx context.Context, g *Globals) error {
	if c.Duplicates {
		if c.Address != "" || len(c.Attr) > 0 || c.Text != "" || c.State != "" || c.Data {
			return &UsageError{Message: "--duplicates takes no filter but --type", Hint: "kl search --duplicates [--type T]"}
		}
		return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Duplicates(ctx, c.Type) })
	}
	if c.Limit < 1 {
		return &UsageError{Message: fmt.Sprintf("--limit %d: give at least 1", c.Limit), Hint: "kl search --limit 500 …"}
	}
	f := inventory.Filters{Type: c.Type, Address: c.Address, Attr: c.Attr, Text: c.Text, State: c.State, Data: c.Data}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Search(ctx, f, c.Limit) })
}

// Search shows up to limit hits of f across states, reading pages until
// it has them: a table of state, version, address and the attribute paths
// that matched, or an inventory.Page as JSON (its next set when more
// hits follow).
func (c *CLI) Search(ctx context.Context, f inventory.Filters, limit int) error {
	all := &inventory.Page{Hits: []inventory.Hit{}}
	for {
		f.Limit = min(limit-len(all.Hits), inventory.MaxLimit)
		p, err := c.api().Search(ctx, f)
		if err != nil {
			return err
		}
		all.Hits = append(all.Hits, p.Hits...)
		all.Next = p.Next
		if p.Next == "" || len(all.Hits) >= limit {
			break
		}
		f.Cursor = p.Next
	}
	return c.show(all, func() error {
		w := c.table()
		row(w, "STATE", "VERSION", "ADDRESS", "MATCHED")
		for _, h := range all.Hits {
			addr := h.Address
			if h.Deposed != "" {
				addr += " (deposed " + h.Deposed + ")"
			}
			row(w, cell(h.State), strconv.FormatInt(h.Version, 10), cell(addr), cell(strings.Join(h.Paths, ", ")))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		more := ""
		if all.Next != "" {
			more = fmt.Sprintf("; more follow (--limit %d or more shows them)", limit*2)
		}
		_, err := fmt.Fprintf(c.Out, "(%s%s)\n", plural(len(all.Hits), "hit", "hits"), more)
		return err
	})
}

// Duplicates shows the objects more than one state records: per object
// its type, key and value, then each state and address recording it.
func (c *CLI) Duplicates(ctx context.Context, typ string) error {
	l, err := c.api().Duplicates(ctx, typ)
	if err != nil {
		return err
	}
	dups := nonNil(l.Duplicates)
	return c.show(inventory.DuplicateList{Duplicates: dups}, func() error {
		w := c.table()
		row(w, "TYPE", "KEY", "VALUE", "STATE", "VERSION", "ADDRESS")
		for _, d := range dups {
			for i, o := range d.Objects {
				typ, key, value := cell(d.Type), d.Key, cell(d.Value)
				if i > 0 {
					typ, key, value = "", "", ""
				}
				row(w, typ, key, value, cell(o.State), strconv.FormatInt(o.Version, 10), cell(o.Address))
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.Out, "(%s managed by more than one state)\n", plural(len(dups), "object", "objects"))
		return err
	})
}

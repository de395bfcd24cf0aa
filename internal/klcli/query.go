package klcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/inventory"
)

// QueryCmd is kl query.
type QueryCmd struct {
	JSONFlag
	SQL  []string `arg:"" optional:"" name:"sql" help:"One SQL statement (quote it; words are joined by spaces); - reads it from stdin. It may start with a -- comment. It runs read-only."`
	File string   `help:"Read the SQL statement from this file (- is stdin), e.g. one of docs/queries/*.sql." placeholder:"FILE" type:"path"`
}

// Run runs the command.
func (c *QueryCmd) Run(ctx context.Context, g *Globals) error {
	sql, err := c.statement(os.Stdin)
	if err != nil {
		return err
	}
	return g.with(ctx, c.JSON, func(cli *CLI) error { return cli.Query(ctx, sql) })
}

// statement is the SQL to run: the arguments, the file named by --file, or
// stdin for "-".
func (c *QueryCmd) statement(stdin io.Reader) (string, error) {
	src := c.File
	switch {
	case src != "" && len(c.SQL) > 0:
		return "", &UsageError{Message: "give the SQL either as an argument or with --file, not both", Hint: "kl query --file docs/queries/inventory_by_type.sql"}
	case len(c.SQL) == 1 && c.SQL[0] == "-":
		src = "-"
	case src == "":
		return strings.Join(c.SQL, " "), nil
	}
	var (
		b   []byte
		err error
	)
	if src == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(src)
	}
	if err != nil {
		return "", withHint(err, "name a file holding one SQL statement, e.g. docs/queries/inventory_by_type.sql")
	}
	return string(b), nil
}

// Query runs one read-only SQL statement and shows its result as a table,
// or as kilolock.QueryResult JSON. The database refuses writes on every
// store; such a query fails with an error matching kilolock.ErrReadOnly and
// changes nothing.
func (c *CLI) Query(ctx context.Context, sql string) error {
	if strings.TrimSpace(sql) == "" {
		return &UsageError{Message: "no SQL to run", Hint: `e.g. kl query "SELECT name FROM states"`}
	}
	res, err := c.api().Query(ctx, sql)
	if errors.Is(err, kilolock.ErrReadOnly) {
		return fmt.Errorf("query refused, nothing was changed: %w", err)
	}
	if err != nil {
		return err
	}
	return c.show(res, func() error {
		w := c.table()
		if len(res.Columns) > 0 {
			cols := make([]string, len(res.Columns))
			for i, col := range res.Columns {
				cols[i] = cell(col)
			}
			row(w, cols...)
		}
		for _, r := range res.Rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = formatValue(v)
			}
			row(w, cells...)
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return c.printf("(%s)\n", plural(len(res.Rows), "row", "rows"))
	})
}

// formatValue shows a query value the same way whichever backend produced
// it: numbers as JSON writes them, text as it is, NULL for nil.
func formatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return cell(v)
	case json.Number:
		return v.String()
	case int64:
		return strconv.FormatInt(v, 10)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case []byte:
		return fmt.Sprintf("\\x%x", v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return cell(fmt.Sprint(v))
	}
	return cell(string(b))
}

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
		if err := writeTable(c, all.Hits, []string{"STATE", "VERSION", "ADDRESS", "MATCHED"}, func(h inventory.Hit) []string {
			addr := h.Address
			if h.Deposed != "" {
				addr += " (deposed " + h.Deposed + ")"
			}
			return []string{cell(h.State), strconv.FormatInt(h.Version, 10), cell(addr), cell(strings.Join(h.Paths, ", "))}
		}); err != nil {
			return err
		}
		more := ""
		if all.Next != "" {
			more = fmt.Sprintf("; more follow (--limit %d or more shows them)", limit*2)
		}
		return c.printf("(%s%s)\n", plural(len(all.Hits), "hit", "hits"), more)
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
		return c.printf("(%s managed by more than one state)\n", plural(len(dups), "object", "objects"))
	})
}

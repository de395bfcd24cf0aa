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
		_, err = fmt.Fprintf(c.Out, "(%s)\n", plural(len(res.Rows), "row", "rows"))
		return err
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

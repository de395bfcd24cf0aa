package klcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kilolock/kilolock"
)

// Query runs one read-only SQL statement and shows its result as a table,
// or as kilolock.QueryResult JSON. The database refuses writes on every
// store; such a query fails with an error matching kilolock.ErrReadOnly and
// changes nothing.
func (c *CLI) Query(ctx context.Context, sql string) error {
	if strings.TrimSpace(sql) == "" {
		return &UsageError{Message: "no SQL to run", Hint: `e.g. kl query "SELECT name FROM states"`}
	}
	res, err := c.Backend.Query(ctx, sql)
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

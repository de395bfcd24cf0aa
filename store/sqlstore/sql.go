package sqlstore

import (
	"strconv"
	"strings"
)

// join lists columns for a statement.
func join(columns []string) string { return strings.Join(columns, ", ") }

// placeholders returns "$from, …" for n values.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

// InsertSQL is the statement that inserts one row into columns of table,
// for a dialect that runs an Insert row by row.
func InsertSQL(table string, columns []string) string {
	return "INSERT INTO " + table + " (" + join(columns) + ") VALUES (" + placeholders(1, len(columns)) + ")"
}

// MapArgs returns args with each value f changes (ok) changed, copying
// args only when f changes one: a dialect's conversion of arguments.
func MapArgs(args []any, f func(any) (v any, ok bool)) []any {
	out, copied := args, false
	for i, a := range args {
		v, ok := f(a)
		if !ok {
			continue
		}
		if !copied {
			out, copied = append([]any(nil), args...), true
		}
		out[i] = v
	}
	return out
}

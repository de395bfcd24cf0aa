package klcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/kilolock/kilolock/client"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/progress"
)

// CLI runs kl's commands over a Conn. Each command writes its result to
// Out: aligned tables for people, or JSON when JSON is set.
type CLI struct {
	Conn *Conn
	Out  io.Writer
	// Documents receives what is written byte for byte, for programs: the
	// state files of kl export and kl state pull. nil means Out. Out
	// escapes control characters (Globals gives it so); Documents does not.
	Documents io.Writer
	// JSON selects machine-readable output.
	JSON bool
	// Now is the clock ages are computed against; nil means time.Now.
	Now func() time.Time
	// Progress shows how far long work (import, export) has come; nil
	// shows nothing.
	Progress progress.Reporter
}

// api is the client of the CLI's Conn.
func (c *CLI) api() *client.Client { return c.Conn.api }

// withProgress is ctx carrying the CLI's Progress, for the backend's
// transfers.
func (c *CLI) withProgress(ctx context.Context) context.Context {
	if c.Progress == nil {
		return ctx
	}
	return progress.With(ctx, c.Progress)
}

// documents is where state files go: Documents, else Out.
func (c *CLI) documents() io.Writer {
	if c.Documents != nil {
		return c.Documents
	}
	return c.Out
}

func (c *CLI) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// writeJSON writes v as indented JSON, the one encoding of kl's --json.
func (c *CLI) writeJSON(v any) error {
	enc := json.NewEncoder(c.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// show writes a command's result v, kl's one choice of output: JSON with
// --json, else what text writes to Out for people.
func (c *CLI) show(v any, text func() error) error {
	if c.JSON {
		return c.writeJSON(v)
	}
	return text()
}

// say is show of one line of text: format with args.
func (c *CLI) say(v any, format string, args ...any) error {
	return c.show(v, func() error { return c.printf(format, args...) })
}

// printf writes text for people to Out: format with args.
func (c *CLI) printf(format string, args ...any) error {
	_, err := fmt.Fprintf(c.Out, format, args...)
	return err
}

// list writes items, as JSON with --json (an empty list, never null),
// else as a table: header, then cells of each item.
func list[T any](c *CLI, items []T, header []string, cells func(T) []string) error {
	if items == nil {
		items = []T{}
	}
	if c.JSON {
		return c.writeJSON(items)
	}
	return writeTable(c, items, header, cells)
}

// writeTable writes items as a table for people: header, then cells of
// each item.
func writeTable[T any](c *CLI, items []T, header []string, cells func(T) []string) error {
	tw := c.table()
	row(tw, header...)
	for _, it := range items {
		row(tw, cells(it)...)
	}
	return tw.Flush()
}

// table returns a tabwriter on Out with kl's layout: columns two spaces
// apart. Flush it.
func (c *CLI) table() *table {
	t := &table{out: c.Out}
	t.Writer = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	return t
}

// table is a tabwriter whose lines reach out in one Write at Flush: the
// tabwriter writes each cell and each cell's padding apart, a system call
// each on a pipe or terminal (14,000 for kl history --limit 1000, a sixth
// of its CPU). One Write also hands out (kl's escaping) whole runes.
type table struct {
	*tabwriter.Writer
	out io.Writer
	buf bytes.Buffer
}

// Flush writes the table's lines to out.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	_, err := t.out.Write(t.buf.Bytes())
	t.buf.Reset()
	return err
}

// row writes one tab-separated table row.
func row(w io.Writer, cells ...string) {
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// timeLayout is how kl shows instants: UTC, to the second.
const timeLayout = "2006-01-02 15:04:05Z"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(timeLayout)
}

// formatAge shows a duration to the second, with days past 48 hours.
func formatAge(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	if d >= 48*time.Hour {
		days := d / (24 * time.Hour)
		return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
	}
	return d.String()
}

// orDash shows an empty value as "-" so that table columns stay aligned.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return cell(s)
}

// cell makes s safe in a table cell: no tabs or line breaks.
func cell(s string) string { return history.OneLine(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writeDryRunEnd ends what a dry run printed, the same for every command
// that writes (kl state rm/mv, moves between states, kl rollback, kl
// retention apply): nothing was changed, and how to do it.
func writeDryRunEnd(w io.Writer, howToDo string) {
	fmt.Fprintf(w, "Dry run: nothing was changed. To do it: %s.\n", howToDo)
}

// withoutDryRun is the howToDo of a command that writes without --dry-run.
const withoutDryRun = "run the same command without --dry-run"

// textWriter is kl's output path to a terminal: it escapes the control
// characters of what it writes, so that text that came from a client (a
// lock's Who and Info, actor names, messages and hints of a server) cannot
// set a terminal's title, clear its screen or write its clipboard (OSC 52).
// Tabs and newlines pass; every other C0 control, DEL and the C1 controls
// become \u00XX, which keeps JSON output valid and equal in meaning.
//
// What a reader that went away (EPIPE) would have read is dropped: the
// IaC CLI's output copied to kl's stderr keeps draining, so that the CLI,
// interrupted (SignalContext), can stop gracefully rather than block on a
// full pipe until it is killed with its state lock held.
type textWriter struct{ w io.Writer }

// escaped returns w behind kl's escaping of control characters.
func escaped(w io.Writer) io.Writer {
	if _, ok := w.(*textWriter); ok {
		return w
	}
	return &textWriter{w: w}
}

func (t *textWriter) Write(p []byte) (int, error) {
	clean := true
	for i := 0; i < len(p) && clean; {
		r, size := utf8.DecodeRune(p[i:])
		clean = !isControl(r, size)
		i += size
	}
	if clean {
		return t.write(p, len(p))
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		if isControl(r, size) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	return t.write(out, len(p))
}

// write writes b, the escaped form of n bytes.
func (t *textWriter) write(b []byte, n int) (int, error) {
	if _, err := t.w.Write(b); err != nil && !errors.Is(err, syscall.EPIPE) {
		return 0, err
	}
	return n, nil
}

// isControl reports whether the rune r, size bytes long in UTF-8, is a
// control character kl escapes: C0 but tab and newline, DEL, and C1 (a
// valid two-byte sequence; a stray byte decodes as RuneError and passes).
func isControl(r rune, size int) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	}
	return r >= 0x80 && r <= 0x9f && size == 2
}

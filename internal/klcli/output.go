package klcli

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unicode/utf8"
)

// textWriter is kl's output path to a terminal: it escapes the control
// characters of what it writes, so that text that came from a client (a
// lock's Who and Info, actor names, messages and hints of a server) cannot
// set a terminal's title, clear its screen or write its clipboard (OSC 52).
// Tabs and newlines pass; every other C0 control, DEL and the C1 controls
// become \u00XX, which keeps JSON output valid and equal in meaning.
//
// writeDryRunEnd ends what a dry run printed, the same for every command
// that writes (kl state rm/mv, moves between states, kl rollback, kl
// retention apply): nothing was changed, and how to do it.
func writeDryRunEnd(w io.Writer, howToDo string) {
	fmt.Fprintf(w, "Dry run: nothing was changed. To do it: %s.\n", howToDo)
}

// withoutDryRun is the howToDo of a command that writes without --dry-run.
const withoutDryRun = "run the same command without --dry-run"

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

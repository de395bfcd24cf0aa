package httpbackend

import (
	"bytes"
	"io"

	"github.com/charmbracelet/log"
)

// NewLogger returns a logger writing to w with o, on which every entry is
// one line whatever its values hold. Log values carry what clients send (a
// LockInfo's ID and Who, a lock id, a path, a lineage, an address), and the
// text formatter prints a value holding a newline on lines of its own: a
// LockInfo whose Who is "x\nERRO panic serving request" would forge a log
// line. Here every line feed or carriage return inside an entry is written
// as the two characters \n or \r instead, in one place for every value,
// message and formatter (logfmt and JSON escape them already). Use it for
// Options.Logger; kld does.
func NewLogger(w io.Writer, o log.Options) *log.Logger {
	var out io.Writer = oneLine{w}
	if f, ok := w.(fdWriter); ok {
		// Keep the file descriptor visible, so that a terminal still gets
		// the text formatter's colours.
		out = oneLineFile{oneLine{w}, f}
	}
	return log.NewWithOptions(out, o)
}

// oneLine writes each entry (one Write, ending in a newline) on one line.
type oneLine struct{ w io.Writer }

func (o oneLine) Write(p []byte) (int, error) {
	body := bytes.TrimSuffix(p, []byte{'\n'})
	if bytes.IndexByte(body, '\n') < 0 && bytes.IndexByte(body, '\r') < 0 {
		return o.w.Write(p) // every entry of a well-behaved client
	}
	out := make([]byte, 0, len(p)+32)
	for _, c := range body {
		switch c {
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, c)
		}
	}
	if len(body) < len(p) {
		out = append(out, '\n')
	}
	if _, err := o.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// fdWriter is a writer with a file descriptor, such as os.Stderr.
type fdWriter interface {
	io.Writer
	Fd() uintptr
}

type oneLineFile struct {
	oneLine
	f fdWriter
}

func (o oneLineFile) Fd() uintptr { return o.f.Fd() }

package graph

// ProgressStep is how far a reader of a document moves between two calls
// of its Done (see ParseOptions.Done): a megabyte, so that a caller giving
// back a file's pages behind the reader makes a call per megabyte read.
const ProgressStep = 1 << 20

// Progress tells Done how far a reader has read a document, ProgressStep
// bytes or more at a time, from where it started. The zero value (no
// Done) tells nothing.
type Progress struct {
	Done        func(from, to int)
	start, mark int
}

// From returns a Progress of the same Done for a reader starting at n.
func (p Progress) From(n int) Progress { return Progress{Done: p.Done, start: n, mark: n} }

// At tells Done that the reader is at n, if it moved ProgressStep or more
// since Done was last told.
func (p *Progress) At(n int) {
	if p.Done != nil && n-p.mark >= ProgressStep {
		p.Done(p.mark, n)
		p.mark = n
	}
}

// Flush tells Done the rest, up to n, when the reader read ProgressStep or
// more in all: a short read is not worth a call.
func (p *Progress) Flush(n int) {
	if p.Done != nil && n > p.mark && n-p.start >= ProgressStep {
		p.Done(p.mark, n)
		p.mark = n
	}
}

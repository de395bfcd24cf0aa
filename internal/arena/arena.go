// Package arena packs many small byte slices into shared chunks: a state's
// instance objects, as a parse or a store load makes them, cost their bytes
// and not the rounding of one allocation each (about a sixth more for
// objects of a kilobyte).
package arena

// Chunk sizes: the first is small, for small states; each next one doubles
// up to Max.
const (
	Min = 4 << 10
	Max = 1 << 20
)

// Arena copies slices into its current chunk. The zero value is ready to
// use. Copies are capped at their length, so appending to one never writes
// into the next.
type Arena struct {
	buf   []byte
	chunk int
}

// Keep returns a copy of b that lives in the arena. A chunk stays alive as
// long as any copy in it does.
func (a *Arena) Keep(b []byte) []byte {
	if len(b) > cap(a.buf)-len(a.buf) {
		n := max(a.chunk, Min)
		a.chunk = min(2*n, Max)
		a.buf = make([]byte, 0, max(n, len(b)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

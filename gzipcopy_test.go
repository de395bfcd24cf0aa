package kilolock

import (
	"io"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestGzipCopyHoldsItsBytes: the compressed copy a current version keeps
// for its readers holds its bytes and not the free end of its last chunk
// (up to 1 MiB, a quarter of the copy of a 10,000-instance state).
func TestGzipCopyHoldsItsBytes(t *testing.T) {
	for _, n := range []int{1, 300, 3000} {
		g, err := graph.Parse(graphtest.Generate(n, 1024, graph.FormatIndent))
		if err != nil {
			t.Fatal(err)
		}
		b := renderedBody(Version{}, g)
		size, err := b.WriteGzipTo(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		gz := b.gz.Load()
		var held int
		for _, c := range gz.chunks {
			held += cap(c)
		}
		// An eighth, and the rounding of one allocation to its size class.
		if limit := size + size/8 + 8<<10; int64(held) > limit {
			t.Errorf("%d instances: the %d-byte copy holds %d bytes of chunks, over %d", n, size, held, limit)
		}
	}
}

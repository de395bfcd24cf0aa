package kilolock

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"github.com/kilolock/kilolock/graph"
)

// Body is one version of a state as the engine serves it, without its
// bytes in memory: they are written from the version's parts on each read
// (graph.State.RenderTo, about as fast as copying them), or from the
// compressed copy the version keeps, and compressed at most once however
// many read it at once. A state of any size so costs its parts and one
// compressed copy, never a copy of its bytes per reader, and a freshly
// posted body is not kept once its version is committed. Open and
// OpenVersion return one; Read and ReadVersion give its Bytes. A Body is
// safe for concurrent use.
type Body struct {
	Version Version

	graph *graph.State // renders the document when gzipped is nil
	// gzipped is the whole document gzip-compressed, when the version
	// keeps it so: an opaque (client-side encrypted) version, or bytes
	// that rendering the version does not give.
	gzipped []byte

	measure sync.Once // sets size and sum when the constructor did not
	size    int64
	sum     uint64

	// gz is the compressed copy made from graph, on demand; nil until a
	// reader asks, and again once dropped (see dropGzip).
	gz atomic.Pointer[gzipCopy]
}

// docSeed seeds the hash that tells a re-POST of the current bytes.
var docSeed = maphash.MakeSeed()

// sumOf is the hash of a document's bytes that Body.same compares first.
func sumOf(b []byte) uint64 { return maphash.Bytes(docSeed, b) }

// sumOfDone is sumOf, a graph.ProgressStep at a time, telling done.
func sumOfDone(b []byte, done func(from, to int)) uint64 {
	if done == nil {
		return sumOf(b)
	}
	var h maphash.Hash
	h.SetSeed(docSeed)
	p := graph.Progress{Done: done}
	for at := 0; at < len(b); at += graph.ProgressStep {
		end := min(at+graph.ProgressStep, len(b))
		h.Write(b[at:end])
		p.At(end)
	}
	p.Flush(len(b))
	return h.Sum64()
}

// postedBody is the body of a version whose bytes (the posted document,
// of size bytes and sumOf sum) are what rendering g in its format gives.
func postedBody(v Version, g *graph.State, size int, sum uint64) *Body {
	b := &Body{Version: v, graph: g, size: int64(size), sum: sum}
	b.measure.Do(func() {})
	return b
}

// renderedBody is the body of a version whose bytes are the rendering of g
// (a version the server made, or one loaded from the store), measured the
// first time its size is asked for.
func renderedBody(v Version, g *graph.State) *Body { return &Body{Version: v, graph: g} }

// gzippedBody is the body of a version that keeps its bytes compressed.
// g may be nil (an opaque version); doc, when not nil, is the document.
func gzippedBody(v Version, g *graph.State, gzipped, doc []byte) *Body {
	b := &Body{Version: v, graph: g, gzipped: gzipped}
	if doc != nil {
		b.size, b.sum = int64(len(doc)), sumOf(doc)
		b.measure.Do(func() {})
	}
	return b
}

// Size is the length of the document in bytes.
func (b *Body) Size() (int64, error) {
	if err := b.measured(); err != nil {
		return 0, err
	}
	return b.size, nil
}

// measured sets size and sum, reading the document once when they are not
// known.
func (b *Body) measured() error {
	var err error
	b.measure.Do(func() {
		var h maphash.Hash
		h.SetSeed(docSeed)
		b.size, err = b.WriteTo(&h)
		b.sum = h.Sum64()
	})
	if err != nil {
		return fmt.Errorf("version %d of %q: %w", b.Version.Number, b.Version.State, err)
	}
	return nil
}

// WriteTo writes the document to w.
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	if b.gzipped == nil {
		return b.graph.RenderTo(w, b.graph.Format)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.gzipped))
	if err != nil {
		return 0, fmt.Errorf("stored bytes: %w", err)
	}
	n, err := io.Copy(w, zr)
	if err != nil {
		return n, fmt.Errorf("stored bytes: %w", err)
	}
	return n, nil
}

// WriteGzipTo writes the document gzip-compressed to w. The first call
// starts compressing it, once; every call, the first too, writes the
// compressed bytes as they are made, so the first reader of a large state
// waits for no more than its first bytes, and later ones get the copy.
func (b *Body) WriteGzipTo(w io.Writer) (int64, error) {
	if b.gzipped != nil {
		n, err := w.Write(b.gzipped)
		return int64(n), err
	}
	for {
		if gz := b.gz.Load(); gz != nil {
			gz.start(b)
			return gz.writeTo(w)
		}
		// The first reader, or the first after dropGzip (which may drop
		// this one too before it is loaded: then again).
		b.gz.CompareAndSwap(nil, new(gzipCopy))
	}
}

// dropGzip lets go of the compressed copy made from the graph, if any: the
// version is about to be superseded (a write of its state has begun), so
// the copy would soon be garbage, and holding it through the write costs a
// quarter of the state's bytes at the write's peak. Readers streaming it
// finish; a reader that asks after (the write failed, or one that reads
// this version still) compresses it again.
func (b *Body) dropGzip() { b.gz.Store(nil) }

// GzipSize is the length of the compressed document, and true, once the
// whole of it is made.
func (b *Body) GzipSize() (int64, bool) {
	if b.gzipped != nil {
		return int64(len(b.gzipped)), true
	}
	if gz := b.gz.Load(); gz != nil {
		return gz.size()
	}
	return 0, false
}

// Bytes returns the document.
func (b *Body) Bytes() ([]byte, error) {
	size, err := b.Size()
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	if _, err := b.WriteTo(buf); err != nil {
		return nil, fmt.Errorf("version %d of %q: %w", b.Version.Number, b.Version.State, err)
	}
	return buf.Bytes(), nil
}

// same reports whether doc is exactly the document: by length and hash
// first, then byte by byte, without building the document. done is told
// how far each pass over doc got (see WriteOptions.Done).
func (b *Body) same(doc []byte, done func(from, to int)) bool {
	if b.measured() != nil || int64(len(doc)) != b.size || sumOfDone(doc, done) != b.sum {
		return false
	}
	if b.gzipped == nil {
		return b.graph.RenderEqualDone(b.graph.Format, doc, done)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.gzipped))
	if err != nil {
		return false
	}
	buf := make([]byte, 32<<10)
	p := graph.Progress{Done: done}
	defer func() { p.Flush(len(doc)) }()
	for at := 0; ; {
		n, err := io.ReadFull(zr, buf)
		if n > len(doc)-at || !bytes.Equal(buf[:n], doc[at:at+n]) {
			return false
		}
		at += n
		p.At(at)
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return at == len(doc)
		default:
			return false
		}
	}
}

// memory estimates what b holds: its graph's objects, what it keeps
// compressed, and room for the compressed copy it may make (states compress
// to a tenth to a quarter of their bytes).
func (b *Body) memory() int64 {
	n := int64(len(b.gzipped))
	if b.graph != nil {
		n += graphMemory(b.graph)
		if b.gzipped == nil {
			n += b.size / 4
		}
	}
	return n
}

// instanceMemory is about what an Instance costs beside its Object: the
// struct, its strings and its dependencies.
const instanceMemory = 384

func graphMemory(g *graph.State) int64 {
	n := int64(len(g.CheckResults))
	for i := range g.Instances {
		n += int64(len(g.Instances[i].Object)) + instanceMemory
	}
	for i := range g.Outputs {
		n += int64(len(g.Outputs[i].Object)) + 64
	}
	return n
}

// gzipCopy is a document's gzip-compressed copy, made once, in the
// background, into chunks that never move, so that readers stream it as it
// is made and after.
type gzipCopy struct {
	once   sync.Once
	mu     sync.Mutex
	more   sync.Cond // signalled as bytes are added, and when done
	chunks [][]byte
	n      int64
	done   bool
	err    error
}

// gzip chunk sizes: small for small states, up to gzipChunkMax.
const (
	gzipChunkMin = 4 << 10
	gzipChunkMax = 1 << 20
)

func (g *gzipCopy) start(b *Body) {
	g.once.Do(func() {
		g.more.L = &g.mu
		go g.compress(b)
	})
}

func (g *gzipCopy) compress(b *Body) {
	zw, _ := gzip.NewWriterLevel(g, gzip.BestSpeed) // a valid level
	_, err := b.WriteTo(zw)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	g.mu.Lock()
	// The last chunk is cut to its length: up to 1 MiB of a copy kept
	// while the version is current. Readers keep what they took of it.
	if last := len(g.chunks) - 1; last >= 0 && cap(g.chunks[last]) > len(g.chunks[last])+len(g.chunks[last])/8 {
		g.chunks[last] = bytes.Clone(g.chunks[last])
	}
	g.done, g.err = true, err
	g.more.Broadcast()
	g.mu.Unlock()
}

// Write adds compressed bytes: compress's writer.
func (g *gzipCopy) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		last := len(g.chunks) - 1
		if last < 0 || len(g.chunks[last]) == cap(g.chunks[last]) {
			size := gzipChunkMin
			if last >= 0 {
				size = min(2*cap(g.chunks[last]), gzipChunkMax)
			}
			g.chunks = append(g.chunks, make([]byte, 0, size))
			last++
		}
		c := g.chunks[last]
		k := min(len(p), cap(c)-len(c))
		g.chunks[last] = append(c, p[:k]...)
		p = p[k:]
	}
	g.n += int64(n)
	g.more.Broadcast()
	return n, nil
}

// writeTo writes the compressed bytes to w as they are made, until the
// last; the error is w's, or compress's.
func (g *gzipCopy) writeTo(w io.Writer) (int64, error) {
	var (
		sent       int64
		chunk, off int
		pieces     [][]byte
	)
	for {
		g.mu.Lock()
		for sent == g.n && !g.done {
			g.more.Wait()
		}
		pieces = pieces[:0]
		for avail := g.n - sent; avail > 0; {
			c := g.chunks[chunk]
			if off == len(c) {
				// Read to its end while more follows: a full chunk.
				chunk, off = chunk+1, 0
				continue
			}
			pieces = append(pieces, c[off:])
			avail -= int64(len(c) - off)
			off = len(c)
		}
		done, err := g.done, g.err
		total := g.n
		g.mu.Unlock()
		for _, p := range pieces {
			k, werr := w.Write(p)
			sent += int64(k)
			if werr != nil {
				return sent, werr
			}
		}
		if done && sent == total {
			if err != nil {
				return sent, fmt.Errorf("compress the document: %w", err)
			}
			return sent, nil
		}
	}
}

func (g *gzipCopy) size() (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n, g.done && g.err == nil
}

package kilolock

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"github.com/kilolock/kilolock/graph"
)

// Body is one version of a state as the engine serves it. A current
// version keeps its bytes (docBytes): a large one in a spool file, out of
// memory, a small one in memory; its compressed copy is made at most once
// however many read it at once, into a spool file too when the document is
// large. A version read once (OpenVersion) is written from its parts on
// each read (graph.State.RenderTo, about as fast as copying them). An
// opaque version, or one whose bytes its parts do not give, keeps them
// gzip-compressed in memory. A state of any size so costs, in memory, its
// index (see cacheEntry), never a copy of its bytes per reader. Open and
// OpenVersion return one; Read and ReadVersion give its Bytes. A Body is
// safe for concurrent use.
type Body struct {
	Version Version

	// doc is the document, when the version keeps its bytes.
	doc *docBytes
	// graph renders the document when neither doc nor gzipped is set.
	graph *graph.State
	// gzipped is the whole document gzip-compressed, when the version
	// keeps it so: an opaque (client-side encrypted) version, or bytes
	// that rendering the version does not give.
	gzipped []byte

	measure sync.Once // sets size and sum when the constructor did not
	size    int64
	sum     uint64

	// gz is the compressed copy, made on demand; nil until a reader asks,
	// and again once dropped (see dropGzip).
	gz atomic.Pointer[gzipCopy]
}

// docBytes is a document's bytes: in memory, or in a spool file (which
// the garbage collector closes, and so frees, once no Body refers to it:
// readers streaming it hold their Body).
type docBytes struct {
	mem  []byte
	file *Spool
	n    int64
	// dir is where the compressed copy of a document in a file goes.
	dir string
}

// ReadAt reads the document's bytes at off.
func (d *docBytes) ReadAt(p []byte, off int64) (int, error) {
	if d.file == nil {
		if off >= int64(len(d.mem)) {
			return 0, io.EOF
		}
		n := copy(p, d.mem[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	return d.file.ReadAt(p, off)
}

// bytes reads the whole document into memory.
func (d *docBytes) bytes() ([]byte, error) {
	b := make([]byte, d.n)
	if n, err := d.ReadAt(b, 0); n < len(b) {
		return nil, fmt.Errorf("kept bytes: %d of %d read: %w", n, len(b), err)
	}
	return b, nil
}

// copyBufs are the buffers a document in a file is written out through:
// large enough that a 10 MB state takes a few reads and writes.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// fileMinBytes is the size from which a version's bytes, and their
// compressed copy, are kept in a spool file rather than in memory: a
// file costs a descriptor and a write, worth it for a large document only.
const fileMinBytes = 1 << 20

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

// keptBody is the body of a version whose bytes are doc, of hash sum.
func keptBody(v Version, doc *docBytes, sum uint64) *Body {
	b := &Body{Version: v, doc: doc, size: doc.n, sum: sum}
	b.measure.Do(func() {})
	return b
}

// renderedBody is the body of a version whose bytes are the rendering of g
// (a version read once), measured the first time its size is asked for.
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
	switch {
	case b.doc != nil:
		var n int64
		var err error
		if b.doc.file == nil {
			var k int
			k, err = w.Write(b.doc.mem)
			n = int64(k)
		} else {
			bp := copyBufs.Get().(*[]byte)
			n, err = io.CopyBuffer(w, io.NewSectionReader(b.doc, 0, b.doc.n), *bp)
			copyBufs.Put(bp)
		}
		if err != nil {
			return n, fmt.Errorf("kept bytes: %w", err)
		}
		return n, nil
	case b.gzipped == nil:
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

// dropGzip lets go of the compressed copy, if any: the version is about to
// be superseded (a write of its state has begun), so a copy held in memory
// would soon be garbage, and holding it through the write costs a quarter
// of the state's bytes at the write's peak. Readers streaming it finish;
// a reader that asks after (the write failed, or one that reads this
// version still) compresses it again. A copy in a spool file costs no
// memory and is kept.
func (b *Body) dropGzip() {
	if gz := b.gz.Load(); gz != nil && gz.file == nil {
		b.gz.CompareAndSwap(gz, nil)
	}
}

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

// Equal reports whether doc, in memory, is exactly the document.
func (b *Body) Equal(doc []byte) bool {
	return b.same(doc, func() uint64 { return sumOf(doc) }, bytes.NewReader(doc))
}

// same reports whether doc is exactly the document: by length and hash
// (docSum, asked only when the lengths match) first, then byte by byte,
// without building the document; doc's bytes are read from src (which
// holds them: a file doc maps), not from doc's own memory.
func (b *Body) same(doc []byte, docSum func() uint64, src io.ReaderAt) bool {
	if b.measured() != nil || int64(len(doc)) != b.size || docSum() != b.sum {
		return false
	}
	var r io.Reader
	switch {
	case b.doc != nil:
		r = io.NewSectionReader(b.doc, 0, b.doc.n)
	case b.gzipped == nil:
		return b.graph.RenderEqualAt(b.graph.Format, doc, src)
	default:
		zr, err := gzip.NewReader(bytes.NewReader(b.gzipped))
		if err != nil {
			return false
		}
		r = zr
	}
	mine, theirs := make([]byte, 64<<10), make([]byte, 64<<10)
	for at := int64(0); ; {
		n, err := io.ReadFull(r, mine)
		if int64(n) > int64(len(doc))-at {
			return false
		}
		if k, _ := src.ReadAt(theirs[:n], at); k < n || !bytes.Equal(mine[:n], theirs[:n]) {
			return false
		}
		at += int64(n)
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return at == int64(len(doc))
		default:
			return false
		}
	}
}

// memory is what b keeps: its bytes, in memory or in a file, what it
// keeps compressed, its compressed copy as far as it is made, and its
// graph's objects.
func (b *Body) memory() int64 {
	n := int64(len(b.gzipped))
	if b.doc != nil {
		n += b.doc.n
	}
	if gz := b.gz.Load(); gz != nil {
		made, _ := gz.size()
		n += made
	}
	if b.graph != nil {
		n += graphMemory(b.graph)
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
// background, into chunks that never move (or, for a document in a spool
// file, into a spool file of its own), so that readers stream it as it is
// made and after.
type gzipCopy struct {
	once   sync.Once
	mu     sync.Mutex
	more   sync.Cond // signalled as bytes are added, and when done
	chunks [][]byte
	file   *Spool
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
		if b.doc != nil && b.doc.file != nil {
			// In memory if no file can be made.
			g.file, _ = newSpool(b.doc.dir)
		}
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
	n := len(p)
	if g.file != nil {
		// Only compress writes, at the end; readers read below g.n.
		if _, err := g.file.WriteAt(p, g.n); err != nil {
			return 0, err
		}
		g.mu.Lock()
		g.n += int64(n)
		g.more.Broadcast()
		g.mu.Unlock()
		return n, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
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
		buf        []byte
	)
	for {
		g.mu.Lock()
		for sent == g.n && !g.done {
			g.more.Wait()
		}
		pieces = pieces[:0]
		total := g.n
		if g.file == nil {
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
		}
		done, err := g.done, g.err
		g.mu.Unlock()
		if g.file != nil && sent < total {
			if buf == nil {
				buf = make([]byte, 32<<10)
			}
			n, werr := io.CopyBuffer(w, io.NewSectionReader(g.file, sent, total-sent), buf)
			sent += n
			if werr != nil {
				return sent, werr
			}
		}
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

// Spool is a file that holds one large document out of memory: a request
// body as it arrives, or the bytes of a version being served. Its name is
// removed as soon as it is made where the system allows it, so that what
// it holds goes when it is closed, or when the process ends, whatever
// happens; elsewhere Close removes it.
//
// What is written through its Write is hashed as it goes, so that the
// engine, given a Spool with the body it maps (WriteOptions.Spool), knows
// the body's hash without reading it again.
type Spool struct {
	*os.File
	name    string // removed by Close: the system kept it when the file was made
	h       maphash.Hash
	written int64
	taken   atomic.Bool
}

// Write appends p to the file, hashing it.
func (s *Spool) Write(p []byte) (int, error) {
	n, err := s.File.Write(p)
	s.h.Write(p[:n])
	s.written += int64(n)
	return n, err
}

// Taken reports whether an Engine took the Spool over as a version's bytes
// (see WriteOptions.Spool): it is then the engine's, which closes it.
func (s *Spool) Taken() bool { return s.taken.Load() }

// sum is the hash, as sumOf hashes, of the n bytes written through Write;
// false when other writes (WriteAt) may have changed them.
func (s *Spool) sum(n int64) (uint64, bool) {
	if s.written != n {
		return 0, false
	}
	return s.h.Sum64(), true
}

// Close closes the file and frees what it holds.
func (s *Spool) Close() error {
	err := s.File.Close()
	if s.name != "" {
		if rerr := os.Remove(s.name); err == nil {
			err = rerr
		}
	}
	return err
}

// SpoolFile makes an empty Spool in Options.SpoolDir.
func (e *Engine) SpoolFile() (*Spool, error) { return newSpool(e.spoolDir) }

// newSpool makes an empty Spool in dir ("" for os.TempDir()).
func newSpool(dir string) (*Spool, error) {
	f, err := os.CreateTemp(dir, "kilolock-*.spool")
	if err != nil {
		return nil, fmt.Errorf("spool a document: %w", err)
	}
	s := &Spool{File: f}
	s.h.SetSeed(docSeed)
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	return s, nil
}

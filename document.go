package kilolock

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/delta"
)

// Document is one version of a state as bytes, in memory: what Read and
// ReadVersion return. To serve a version without holding its bytes, Open
// it (see Body).
type Document struct {
	Version Version
	Bytes   []byte
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func gunzipBytes(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// graphOf is the graph of a stored version, in Terraform's order; nil for
// an opaque (client-side encrypted) version.
func graphOf(snap *Snapshot) (*graph.State, error) {
	v := snap.Version
	if v.Format == FormatOpaque {
		return nil, nil
	}
	g := &graph.State{
		Version:          4,
		TerraformVersion: v.TerraformVersion,
		Serial:           v.Serial,
		Lineage:          v.Lineage,
		Outputs:          snap.Outputs,
		Instances:        snap.Instances,
		CheckResults:     snap.CheckResults,
		Format:           graph.ParseFormat(v.Format),
	}
	g.Sort()
	return g, nil
}

// bodyOf is a stored version to serve: its graph, which renders it, or
// the bytes it keeps when rendering does not give them (see keptBytes). The
// graph is nil for an opaque (client-side encrypted) version.
func (e *Engine) bodyOf(snap *Snapshot) (*Body, *graph.State, error) {
	v := snap.Version
	g, err := graphOf(snap)
	if err != nil {
		return nil, nil, err
	}
	if g == nil {
		return gzippedBody(v, nil, snap.Raw, nil), nil, nil
	}
	if snap.Raw == nil {
		return renderedBody(v, g), g, nil
	}
	if !bytes.HasPrefix(snap.Raw, []byte(keptDeltaMagic)) {
		return gzippedBody(v, nil, snap.Raw, nil), g, nil
	}
	// A delta against the rendering: made into the whole document once,
	// and kept compressed.
	b, err := keptDocument(snap.Raw, func() []byte { return g.Render(g.Format) })
	if errors.Is(err, delta.ErrMismatch) {
		// The rendering is not the one the kept delta was made against:
		// only a change to how this program renders state could do that.
		// The rendering means the same as the posted bytes; serve it
		// rather than fail the read, and say so.
		e.log.Error("kept bytes of a version do not apply to its rendering; serving the rendering, which means the same", "state", v.State, "version", v.Number, "err", err)
		return renderedBody(v, g), g, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("version %d of %q: stored bytes: %w", v.Number, v.State, err)
	}
	return gzippedBody(v, nil, gzipBytes(b), b), g, nil
}

// docCache keeps the current version of recently used states, keyed by
// state name and trusted only for the exact version id the store reports
// as current. It evicts least recently used states past its budget.
type docCache struct {
	mu     sync.Mutex
	budget int64
	size   int64
	lru    *list.List // of *cacheEntry, front = most recent
	byName map[string]*list.Element
}

// cacheEntry is a state's current version as the engine keeps it: its
// body (its bytes, in a spool file when large) and its index, the lean
// graph (graph.State.Lean) that tells what the next write changes and
// what Status counts. The whole graph, objects and all, is made from the
// bytes the first time a reader asks for it (see Engine.fullGraph), kept
// while the version is current, and let go when a write of the state
// begins: a state that is only written and read back, as Terraform does,
// never holds its objects in memory.
type cacheEntry struct {
	name  string
	body  *Body
	index *graph.State // nil for an opaque version
	base  int64        // what body and index count toward the budget

	// mu guards full and deps, made on demand and dropped by writes.
	mu   sync.Mutex
	full *graph.State
	// deps indexes full's dependency edges for cones and slices, built
	// the first time one asks (see depIndex).
	deps *graph.DepIndex
}

func newDocCache(budget int64) *docCache {
	return &docCache{budget: budget, lru: list.New(), byName: map[string]*list.Element{}}
}

func (c *docCache) get(name string, versionID int64) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byName[name]
	if !ok {
		return nil
	}
	ent := el.Value.(*cacheEntry)
	if ent.body.Version.ID != versionID {
		return nil
	}
	c.lru.MoveToFront(el)
	return ent
}

// put caches b and index (lean) as name's current version and returns
// their entry (which is not cached when a newer version is already).
func (c *docCache) put(name string, b *Body, index *graph.State) *cacheEntry {
	ent := &cacheEntry{name: name, body: b, index: index, base: b.memory()}
	if index != nil {
		ent.base += graphMemory(index)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byName[name]; ok {
		old := el.Value.(*cacheEntry)
		if old.body.Version.ID > b.Version.ID {
			return ent // a newer version is cached already
		}
		c.size -= old.base + old.extra()
		c.lru.Remove(el)
	}
	c.byName[name] = c.lru.PushFront(ent)
	c.size += ent.base
	c.evict()
	return ent
}

// extra is what ent's whole graph and dependency index count toward the
// budget; ent.mu or the cache's mu is held (they change under both).
func (ent *cacheEntry) extra() int64 {
	var n int64
	if ent.full != nil {
		n += graphMemory(ent.full)
	}
	if ent.deps != nil {
		n += ent.deps.Bytes()
	}
	return n
}

// setExtra sets ent's whole graph and dependency index, counting the
// change toward the budget while ent is cached. ent.mu is held.
func (c *docCache) setExtra(ent *cacheEntry, full *graph.State, deps *graph.DepIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := ent.extra()
	ent.full, ent.deps = full, deps
	if el, ok := c.byName[ent.name]; ok && el.Value.(*cacheEntry) == ent {
		c.size += ent.extra() - before
		c.evict()
	}
}

// dropFull lets go of ent's whole graph and dependency index: a write of
// its state has begun, so they would soon be garbage, and holding them
// through the write costs the state's objects at the write's peak.
// Readers holding them keep them.
func (c *docCache) dropFull(ent *cacheEntry) {
	ent.mu.Lock()
	defer ent.mu.Unlock()
	c.setExtra(ent, nil, nil)
}

// depIndex returns the DepIndex of full, ent's whole graph (not nil),
// building it the first time, once however many ask at once: O(state)
// once per cached version, so that each cone after it costs what it
// visits. While ent is cached its graph and index count toward the
// budget.
func (c *docCache) depIndex(ent *cacheEntry, full *graph.State) *graph.DepIndex {
	ent.mu.Lock()
	defer ent.mu.Unlock()
	if ent.deps != nil && ent.full == full {
		return ent.deps
	}
	x := graph.NewDepIndex(full)
	if ent.full == nil || ent.full == full {
		c.setExtra(ent, full, x)
	}
	return x
}

// evict drops least recently used entries past the budget, keeping the
// most recent one. c.mu is held.
func (c *docCache) evict() {
	for c.size > c.budget && c.lru.Len() > 1 {
		el := c.lru.Back()
		old := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.byName, old.name)
		c.size -= old.base + old.extra()
	}
}

func (c *docCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byName[name]; ok {
		old := el.Value.(*cacheEntry)
		c.size -= old.base + old.extra()
		c.lru.Remove(el)
		delete(c.byName, name)
	}
}

// fullGraph returns the whole graph of ent's version (nil for an opaque
// one), made from its bytes (or, when it keeps bytes its rows do not
// render, loaded from the store) the first time a reader asks, once however
// many ask at once, and kept with ent while it is current.
func (e *Engine) fullGraph(ctx context.Context, ent *cacheEntry) (*graph.State, error) {
	if ent.index == nil {
		return nil, nil
	}
	ent.mu.Lock()
	defer ent.mu.Unlock()
	if ent.full != nil {
		return ent.full, nil
	}
	var (
		g   *graph.State
		err error
	)
	if ent.body.doc != nil {
		// The bytes are the rendering of the version's rows: parsed,
		// they are its graph.
		var b []byte
		if b, err = ent.body.Bytes(); err == nil {
			if g, err = graph.Parse(b); err == nil {
				g.Detach()
			}
		}
	} else {
		v := ent.body.Version
		var snap *Snapshot
		if snap, err = e.store.Snapshot(ctx, v.State, v.Number); err == nil {
			g, err = graphOf(snap)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("version %d of %q: %w", ent.body.Version.Number, ent.name, err)
	}
	e.cache.setExtra(ent, g, nil)
	return g, nil
}

// keepRendering makes the body and index of version v, whose graph g
// (the engine's own, not shared) is rendered into the bytes the version
// keeps: a spool file when they are large. Each instance learns its
// fragment as rendered (graph.State.RenderIndexTo), so that the next
// write finds its unchanged instances by their bytes, and g is then made
// lean: it is the version's index.
func (e *Engine) keepRendering(v Version, g *graph.State) (*Body, *graph.State, error) {
	w := &docWriter{dir: e.spoolDir}
	w.h.SetSeed(docSeed)
	_, err := g.RenderIndexTo(w, g.Format)
	if err == nil {
		err = w.err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("version %d of %q: render its bytes: %w", v.Number, v.State, err)
	}
	g.Lean()
	return keptBody(v, w.doc(), w.h.Sum64()), g, nil
}

// docWriter takes a document being written into the bytes a version
// keeps: in memory until it reaches fileMinBytes, then in a spool file (in
// memory still if none can be made); h hashes it as sumOf does.
type docWriter struct {
	dir  string
	mem  []byte
	file *Spool
	n    int64
	h    maphash.Hash
	err  error
}

func (w *docWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	if w.file == nil && int64(len(w.mem)+len(p)) >= fileMinBytes {
		if f, err := newSpool(w.dir); err == nil {
			if _, err := f.Write(w.mem); err != nil {
				f.Close()
			} else {
				w.file, w.mem = f, nil
			}
		}
	}
	if w.file != nil {
		if _, err := w.file.Write(p); err != nil {
			w.err = err
			return 0, err
		}
	} else {
		w.mem = append(w.mem, p...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *docWriter) doc() *docBytes {
	return &docBytes{mem: w.mem, file: w.file, n: w.n, dir: w.dir}
}

// keepDoc returns body as the bytes a version keeps: the Spool it maps
// when the writer gives it (o.Spool), taken over, else a copy, in a spool
// file when large.
func (e *Engine) keepDoc(body []byte, o *WriteOptions) *docBytes {
	if sp := o.Spool; len(body) >= fileMinBytes && sp != nil {
		if fi, err := sp.Stat(); err == nil && fi.Size() == int64(len(body)) && sp.taken.CompareAndSwap(false, true) {
			return &docBytes{file: sp, n: int64(len(body)), dir: e.spoolDir}
		}
	}
	w := &docWriter{dir: e.spoolDir}
	if _, err := w.Write(body); err != nil {
		e.log.Warn("keeping a version's bytes in a spool file failed: keeping them in memory", "err", err)
		return &docBytes{mem: bytes.Clone(body), n: int64(len(body)), dir: e.spoolDir}
	}
	return w.doc()
}

package kilolock

import (
	"bytes"
	"container/list"
	"errors"
	"fmt"
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

// bodyOf is a stored version to serve: its graph, which renders it, or
// the bytes it keeps when rendering does not give them (see keptBytes). The
// graph is nil for an opaque (client-side encrypted) version.
func (e *Engine) bodyOf(snap *Snapshot) (*Body, *graph.State, error) {
	v := snap.Version
	if v.Format == FormatOpaque {
		return gzippedBody(v, nil, snap.Raw, nil), nil, nil
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
	if snap.Raw == nil {
		return renderedBody(v, g), g, nil
	}
	if !bytes.HasPrefix(snap.Raw, []byte(keptDeltaMagic)) {
		return gzippedBody(v, g, snap.Raw, nil), g, nil
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
	return gzippedBody(v, g, gzipBytes(b), b), g, nil
}

// docCache keeps the current body and graph of recently used states,
// keyed by state name and trusted only for the exact version id the store
// reports as current. It evicts least recently used states past its budget.
type docCache struct {
	mu     sync.Mutex
	budget int64
	size   int64
	lru    *list.List // of *cacheEntry, front = most recent
	byName map[string]*list.Element
}

type cacheEntry struct {
	name  string
	body  *Body
	graph *graph.State
	size  int64
	// deps indexes graph's dependency edges for cones and slices, built
	// the first time one asks (see depIndex).
	depsOnce sync.Once
	deps     *graph.DepIndex
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

// put caches b and g as name's current version and returns their entry
// (which is not cached when a newer version is already).
func (c *docCache) put(name string, b *Body, g *graph.State) *cacheEntry {
	ent := &cacheEntry{name: name, body: b, graph: g, size: b.memory()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byName[name]; ok {
		old := el.Value.(*cacheEntry)
		if old.body.Version.ID > b.Version.ID {
			return ent // a newer version is cached already
		}
		c.size -= old.size
		c.lru.Remove(el)
	}
	c.byName[name] = c.lru.PushFront(ent)
	c.size += ent.size
	c.evict()
	return ent
}

// depIndex returns the DepIndex of ent's graph (not nil), building it the
// first time, once however many ask at once: O(state) once per cached
// version, so that each cone after it costs what it visits. While ent is
// cached its index counts toward the budget.
func (c *docCache) depIndex(ent *cacheEntry) *graph.DepIndex {
	ent.depsOnce.Do(func() {
		x := graph.NewDepIndex(ent.graph)
		c.mu.Lock()
		defer c.mu.Unlock()
		ent.deps = x
		if el, ok := c.byName[ent.name]; ok && el.Value.(*cacheEntry) == ent {
			ent.size += x.Bytes()
			c.size += x.Bytes()
			c.evict()
		}
	})
	return ent.deps
}

// evict drops least recently used entries past the budget, keeping the
// most recent one. c.mu is held.
func (c *docCache) evict() {
	for c.size > c.budget && c.lru.Len() > 1 {
		el := c.lru.Back()
		old := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.byName, old.name)
		c.size -= old.size
	}
}

func (c *docCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byName[name]; ok {
		c.size -= el.Value.(*cacheEntry).size
		c.lru.Remove(el)
		delete(c.byName, name)
	}
}

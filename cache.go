package kilolock

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/kilolock/kilolock/graph"
)

// DefaultCacheBytes is Options.CacheBytes when zero: room for the indexes
// of thousands of states of a few hundred instances and the documents of
// the most recently used, in a kld that stays within a few hundred MB
// (see the fleet benchmark, internal/e2e BenchmarkKLDFleet).
const DefaultCacheBytes = 160 << 20

// docCache keeps the current version of recently used states, keyed by
// state name and trusted only for the exact version id the store reports
// as current, within a budget of bytes (Options.CacheBytes). Of each
// state it keeps two parts:
//
//   - its index: the version's lean graph (graph.State.Lean), packed
//     (graph.Packed), about a hundred bytes per instance that the garbage
//     collector never scans. It is all a write needs: what the next POST
//     is diffed against, so that its cost is O(changes);
//   - its document: its bytes (in memory, or in a spool file when large)
//     and their compressed copy, which GETs serve, and the whole graph
//     readers asked for.
//
// Past the budget it lets go of documents first, least recently used
// first, keeping their states' indexes; only when no other document is
// left does it evict whole states, least recently used first. A fleet of
// states, written more often than each is read, so keeps the index of
// every state it can, and a write on one of a thousand states costs what
// it costs on one. A state whose document was let go is read back from
// the store by its next GET (see Engine.streamEntry); one let go of whole
// costs its next write a read of its version's hashes and of the objects
// it changes (see coldIndex), not a load.
type docCache struct {
	mu     sync.Mutex
	budget int64
	size   int64
	// lru holds every entry, front = most recent: whole states go from
	// its back. docs holds those that keep their document, in the same
	// order: documents go from its back first.
	lru    *list.List
	docs   *list.List
	byName map[string]*list.Element // into lru

	hits, misses, evicted, dropped int64
}

// cacheEntry is a state's current version as the cache keeps it. It does
// not change once made, but for full and deps: letting go of its
// document puts an entry without one in its place, so that whoever holds
// this one may still read it.
type cacheEntry struct {
	name    string
	version Version
	// size and sum are the document's length and hash (see sumOf): what
	// tells a re-POST of the same bytes when the document is not kept.
	size int64
	sum  uint64
	// packed is the index; zero for an opaque version.
	packed graph.Packed
	// body is the document; nil when only the index is kept.
	body *Body

	// docEl is the entry's element in the cache's docs; charge is what it
	// counts toward the budget. Both are guarded by the cache's mu.
	docEl  *list.Element
	charge int64

	// mu guards full and deps, made on demand and dropped by writes.
	mu   sync.Mutex
	full *graph.State
	// deps indexes full's dependency edges for cones and slices, built
	// the first time one asks (see depIndex).
	deps *graph.DepIndex
}

// entryOverhead is about what an entry costs beside its index and
// document: the entry, its version, its list elements and map slot.
const entryOverhead = 512

// CacheStats are what an Engine's cache of current versions holds and has
// done since the engine was made (see Options.CacheBytes).
type CacheStats struct {
	// Hits are reads and writes that found what they needed cached (a
	// write needs the index, a read the document); Misses those that
	// loaded the version from the store.
	Hits, Misses int64
	// Evictions are states let go whole; DocumentEvictions documents let
	// go while their state's index was kept.
	Evictions, DocumentEvictions int64
	// Bytes is what the cache holds now, of Budget; States how many
	// states it keeps, Documents how many of them with their document.
	Bytes, Budget     int64
	States, Documents int
}

// CacheStats returns what the engine's cache of current versions holds
// and has done.
func (e *Engine) CacheStats() CacheStats { return e.cache.stats() }

func newDocCache(budget int64) *docCache {
	return &docCache{budget: budget, lru: list.New(), docs: list.New(), byName: map[string]*list.Element{}}
}

func (c *docCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Evictions: c.evicted, DocumentEvictions: c.dropped,
		Bytes: c.size, Budget: c.budget, States: c.lru.Len(), Documents: c.docs.Len()}
}

// lookup returns name's entry when it is of versionID and holds what the
// caller needs (its document when needBody), counting a hit or a miss.
func (c *docCache) lookup(name string, versionID int64, needBody bool) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	ent := c.find(name, versionID, needBody)
	if ent == nil {
		c.misses++
		return nil
	}
	c.hits++
	return ent
}

// peek is lookup without counting: a second look after a miss.
func (c *docCache) peek(name string, versionID int64, needBody bool) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.find(name, versionID, needBody)
}

// find is lookup's search: it moves what it finds to the front, and
// counts what the entry's document grew by since (its compressed copy,
// made by a GET). c.mu is held.
func (c *docCache) find(name string, versionID int64, needBody bool) *cacheEntry {
	el, ok := c.byName[name]
	if !ok {
		return nil
	}
	ent := el.Value.(*cacheEntry)
	if ent.version.ID != versionID || needBody && ent.body == nil {
		return nil
	}
	c.lru.MoveToFront(el)
	if ent.docEl != nil {
		c.docs.MoveToFront(ent.docEl)
	}
	c.recharge(ent)
	c.evict()
	return ent
}

// put caches b and index (lean, or nil for an opaque version) as name's
// current version and returns their entry (which is not cached when a
// newer version is already).
func (c *docCache) put(name string, b *Body, index *graph.State) *cacheEntry {
	size, _ := b.Size() // known but for a version kept compressed: then measured once
	ent := &cacheEntry{name: name, version: b.Version, size: size, sum: b.sum, body: b}
	if index != nil {
		ent.packed = index.Pack()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byName[name]; ok {
		old := el.Value.(*cacheEntry)
		if old.version.ID > b.Version.ID {
			return ent // a newer version is cached already
		}
		c.remove(el)
	}
	c.byName[name] = c.lru.PushFront(ent)
	ent.docEl = c.docs.PushFront(ent)
	c.recharge(ent)
	c.evict()
	return ent
}

// cost is what ent counts toward the budget: its index, its document and
// compressed copy as they are now, and its whole graph and dependency
// index when made. c.mu is held.
func (c *docCache) cost(ent *cacheEntry) int64 {
	n := entryOverhead + int64(len(ent.name)) + int64(ent.packed.Size())
	if ent.body != nil {
		n += ent.body.memory()
	}
	if ent.full != nil {
		n += graphMemory(ent.full)
	}
	if ent.deps != nil {
		n += ent.deps.Bytes()
	}
	return n
}

// recharge counts ent (cached) anew. c.mu is held.
func (c *docCache) recharge(ent *cacheEntry) {
	n := c.cost(ent)
	c.size += n - ent.charge
	ent.charge = n
}

// setExtra sets ent's whole graph and dependency index, counting the
// change toward the budget while ent is cached. ent.mu is held.
func (c *docCache) setExtra(ent *cacheEntry, full *graph.State, deps *graph.DepIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ent.full, ent.deps = full, deps
	if el, ok := c.byName[ent.name]; ok && el.Value.(*cacheEntry) == ent {
		c.recharge(ent)
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

// evict lets go of documents, least recently used first, and then of
// whole states, until the cache is within its budget, keeping the most
// recently used state whole. c.mu is held.
func (c *docCache) evict() {
	for c.size > c.budget && c.lru.Len() > 0 {
		front := c.lru.Front().Value.(*cacheEntry)
		if el := c.docs.Back(); el != nil && el.Value.(*cacheEntry) != front {
			c.dropDocument(el.Value.(*cacheEntry))
			continue
		}
		el := c.lru.Back()
		if el.Value.(*cacheEntry) == front {
			return
		}
		c.remove(el)
		c.evicted++
	}
}

// dropDocument puts in ent's place an entry of the same version that
// keeps only its index (an opaque version, which has none, goes whole).
// c.mu is held.
func (c *docCache) dropDocument(ent *cacheEntry) {
	el := c.byName[ent.name]
	if ent.packed.IsZero() {
		c.remove(el)
		c.evicted++
		return
	}
	c.docs.Remove(ent.docEl)
	lean := &cacheEntry{name: ent.name, version: ent.version, size: ent.size, sum: ent.sum, packed: ent.packed}
	el.Value = lean
	c.size -= ent.charge
	c.recharge(lean)
	c.dropped++
}

// remove takes el's entry out of the cache. c.mu is held.
func (c *docCache) remove(el *list.Element) {
	ent := el.Value.(*cacheEntry)
	if ent.docEl != nil {
		c.docs.Remove(ent.docEl)
	}
	c.lru.Remove(el)
	delete(c.byName, ent.name)
	c.size -= ent.charge
}

func (c *docCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byName[name]; ok {
		c.remove(el)
	}
}

// lean returns ent's index, unpacked: the caller's to change; nil for an
// opaque version.
func (ent *cacheEntry) lean() (*graph.State, error) {
	if ent.packed.IsZero() {
		return nil, nil
	}
	g, err := ent.packed.Unpack()
	if err != nil {
		return nil, fmt.Errorf("version %d of %q: its cached index: %w", ent.version.Number, ent.name, err)
	}
	return g, nil
}

// fullGraph returns the whole graph of ent's version (nil for an opaque
// one), made from its bytes (or, when it keeps bytes its rows do not
// render or only its index, loaded from the store) the first time a
// reader asks, once however many ask at once, and kept with ent while it
// is current.
func (e *Engine) fullGraph(ctx context.Context, ent *cacheEntry) (*graph.State, error) {
	if ent.packed.IsZero() {
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
	if ent.body != nil && ent.body.doc != nil {
		// The bytes are the rendering of the version's rows: parsed,
		// they are its graph.
		var b []byte
		if b, err = ent.body.Bytes(); err == nil {
			if g, err = graph.Parse(b); err == nil {
				g.Detach()
			}
		}
	} else {
		v := ent.version
		var snap *Snapshot
		if snap, err = e.store.Snapshot(ctx, v.State, v.Number); err == nil {
			g, err = graphOf(snap)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("version %d of %q: %w", ent.version.Number, ent.name, err)
	}
	e.cache.setExtra(ent, g, nil)
	return g, nil
}

// currentIs returns the cache entry of st's current version (its index at
// least) and whether doc, of hash docSum(), read from src, is exactly its
// document: by length and hash first, then byte by byte, reading the
// document back from the store when the cache kept only the index. ent is
// that entry when the caller looked it up already, nil when the cache
// missed it (the store is read).
func (e *Engine) currentIs(ctx context.Context, st *State, ent *cacheEntry, doc []byte, docSum func() uint64, src io.ReaderAt) (*cacheEntry, bool, error) {
	var err error
	if ent == nil {
		if ent, err = e.storedEntry(ctx, st, false); err != nil {
			return nil, false, err
		}
	}
	if ent.body == nil {
		if int64(len(doc)) != ent.size || docSum() != ent.sum {
			return ent, false, nil
		}
		if ent, err = e.loadEntry(ctx, st); err != nil {
			return nil, false, err
		}
	}
	return ent, ent.body.same(doc, docSum, src), nil
}

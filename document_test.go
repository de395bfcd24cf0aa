package kilolock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kilolock/kilolock/graph"
)

// TestDocCacheCountsDepIndexes: a cached version's dependency index is
// built once and counts toward the budget, so that cones on many states
// cannot grow the cache past it: past it, the least recently used state's
// document goes, graph and dependency index with it, and its index stays.
func TestDocCacheCountsDepIndexes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("graph", "testdata", "modules", "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	doc := func(id int64) *Body {
		return keptBody(Version{ID: id}, &docBytes{mem: b, n: int64(len(b))}, sumOf(b))
	}
	probe := newDocCache(1 << 30)
	docSize := probe.put("a", doc(0), g).charge
	x := graph.NewDepIndex(g)
	// Room for two documents, not for two documents and an index.
	c := newDocCache(2*docSize + x.Bytes()/2)
	a := c.put("a", doc(1), g)
	c.put("b", doc(2), g)
	if c.size != 2*docSize || c.lru.Len() != 2 {
		t.Fatalf("size %d with %d entries, want %d with 2", c.size, c.lru.Len(), 2*docSize)
	}
	if c.depIndex(a, g) != c.depIndex(a, g) {
		t.Error("the index was built twice")
	}
	// a is the least recently used: its document (and its graph and
	// dependency index) went past the budget; its index stays.
	if c.peek("a", 1, true) != nil || c.peek("a", 1, false) == nil || c.peek("b", 2, true) == nil || c.size >= 2*docSize {
		t.Errorf("after indexing a: size %d, a's document cached %v; want it let go, a's index and b kept", c.size, c.peek("a", 1, true) != nil)
	}
	// b's graph and dependency index go past it again: no other document
	// is left to let go, so a goes whole, and b (the most recent) stays
	// whole even past the budget.
	c.depIndex(c.peek("b", 2, true), g)
	if want := docSize + x.Bytes() + graphMemory(g); c.size != want || c.lru.Len() != 1 {
		t.Errorf("size %d with %d states, want b alone with its graph and index %d", c.size, c.lru.Len(), want)
	}
	// An entry no longer cached keeps its index but costs the budget
	// nothing.
	stale := c.put("c", doc(3), g)
	c.put("c", doc(4), g)
	before := c.size
	if c.depIndex(stale, g) == nil || c.size != before {
		t.Errorf("indexing an entry that is not cached changed the size %d → %d", before, c.size)
	}
}

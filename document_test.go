package kilolock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kilolock/kilolock/graph"
)

// TestDocCacheCountsDepIndexes: a cached version's dependency index is
// built once and counts toward the budget, so that cones on many states
// cannot grow the cache past it.
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
	docSize := doc(0).memory() + graphMemory(g)
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
	// a is the least recently used: its index, and then a itself, went
	// past the budget.
	if c.get("a", 1) != nil || c.get("b", 2) == nil || c.size != docSize {
		t.Errorf("after indexing a: size %d, a cached %v; want a evicted", c.size, c.get("a", 1) != nil)
	}
	bEnt := c.get("b", 2)
	c.depIndex(bEnt, g)
	if c.size != docSize+x.Bytes()+graphMemory(g) {
		t.Errorf("size %d, want b with its graph and index %d", c.size, docSize+x.Bytes()+graphMemory(g))
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

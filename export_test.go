package kilolock

// Internals the external tests (package kilolock_test) look at.

// CachedParts reports what e's cache keeps of the current version of
// state name: its index, and its document too.
func CachedParts(e *Engine, name string) (index, document bool) {
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	el, ok := e.cache.byName[name]
	if !ok {
		return false, false
	}
	return true, el.Value.(*cacheEntry).body != nil
}

// KeptDocument is the memory of the bytes e's cache keeps of the current
// version of state name, when it keeps them in memory; nil else.
func KeptDocument(e *Engine, name string) []byte {
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	el, ok := e.cache.byName[name]
	if !ok {
		return nil
	}
	if b := el.Value.(*cacheEntry).body; b != nil && b.doc != nil {
		return b.doc.mem
	}
	return nil
}

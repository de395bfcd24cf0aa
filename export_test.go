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

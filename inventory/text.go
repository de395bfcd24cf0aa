package inventory

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// MinIndexedText is the shortest text (in characters) a store's text
// index finds: both index trigrams. A shorter text is checked on every
// object its other filters leave.
const MinIndexedText = 3

// SearchText is what a store indexes of an instance object for a search
// by text: every attribute key and scalar value a search by text looks
// at (Query.match), lowercased, one a line, from the masked object. So a
// text any key or value holds is in it (the index may narrow a search to
// the objects whose SearchText holds the text, and miss none), and no
// sensitive value ever is. An object with no attributes has "".
func SearchText(obj []byte) string {
	return searchText(masked(obj))
}

// searchText is SearchText of a masked instance object.
func searchText(obj []byte) string {
	attrs, ok := attributes(obj)
	if !ok {
		return ""
	}
	var b strings.Builder
	writeText(&b, attrs, false)
	return b.String()
}

// writeText writes the keys and scalar values under v, as textPaths
// reads them (a value at the top, with no path, is not read).
func writeText(b *strings.Builder, v any, inner bool) {
	switch x := v.(type) {
	case map[string]any:
		// In key order: the same object has the same text.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b.WriteString(strings.ToLower(k))
			b.WriteByte('\n')
			writeText(b, x[k], true)
		}
	case []any:
		for _, e := range x {
			writeText(b, e, true)
		}
	default:
		if s, ok := scalar(v); ok && inner {
			b.WriteString(strings.ToLower(s))
			b.WriteByte('\n')
		}
	}
}

// indexable reports whether a store's text index can find text.
func indexable(text string) bool {
	return utf8.RuneCountInString(text) >= MinIndexedText
}

package graph

// Internals the external tests (package graph_test, which may import
// graphtest) look at.

// AppendIndent is appendIndent.
var AppendIndent = appendIndent

// Copyable reports whether in was parsed from a fragment that Render can
// copy as it is in format f.
func Copyable(in *Instance, f Format) bool { return in.copyable(f) }

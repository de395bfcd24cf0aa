package graph

// Internals the external tests (package graph_test, which may import
// graphtest) look at.

// AppendIndent is appendIndent.
var AppendIndent = appendIndent

// Copyable reports whether in was parsed from a fragment that Render can
// copy as it is in format f.
func Copyable(in *Instance, f Format) bool { return in.copyable(f) }

// PackedBytes is a Packed of b, as Pack would have made it.
func PackedBytes(b []byte) Packed { return Packed{b: b} }

// PackedBytesOf is p's bytes.
func PackedBytesOf(p Packed) []byte { return p.b }

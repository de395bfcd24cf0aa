package graph

import (
	"crypto/sha256"
	"encoding/hex"
)

// Format is the byte layout a state file was written in. Both CLIs write
// state deterministically, so knowing the layout is enough to reproduce the
// exact bytes from normalized parts.
type Format uint8

const (
	// FormatIndent is Terraform's layout: json.MarshalIndent with two spaces
	// and a trailing newline.
	FormatIndent Format = iota
	// FormatCompact is compact JSON with no insignificant whitespace.
	FormatCompact
)

// String returns "indent" or "compact".
func (f Format) String() string {
	if f == FormatCompact {
		return "compact"
	}
	return "indent"
}

// ParseFormat is the inverse of Format.String. Unknown names give FormatIndent.
func ParseFormat(s string) Format {
	if s == "compact" {
		return FormatCompact
	}
	return FormatIndent
}

// Hash is a SHA-256 content address. Instance.Hash and Output.Hash address
// the exact compact bytes of an object (and, for instances, the resource
// header): what a store keeps a payload under, so each spelling it was
// given can be served back. CanonicalHash addresses the object's meaning
// (see Canonical): every spelling of one object shares it.
type Hash [sha256.Size]byte

// String returns the hash in lowercase hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero hash.
func (h Hash) IsZero() bool { return h == Hash{} }

// KeyKind says which kind of index key an instance has.
type KeyKind uint8

const (
	// NoKey is a resource without count or for_each.
	NoKey KeyKind = iota
	// IntKey is a count index.
	IntKey
	// StringKey is a for_each key.
	StringKey
)

// IndexKey is an instance's count index or for_each key.
type IndexKey struct {
	Kind KeyKind
	Int  int64
	Str  string
}

// Resource is the resource-level header that every instance of one resource
// shares in the state file.
type Resource struct {
	Module   string // "" for the root module, else e.g. `module.a["x"].module.b`
	Mode     string // "managed" or "data"
	Type     string
	Name     string
	Each     string // "", "list" or "map"
	Provider string // e.g. `provider["registry.opentofu.org/hashicorp/time"]`
}

// Instance is one resource instance object: current, or deposed when Deposed
// is set.
type Instance struct {
	Resource Resource
	Key      IndexKey
	Deposed  string // deposed key, "" for the current object
	Status   string // "" or "tainted"

	// Object is the instance object exactly as in the state file's
	// "instances" array, compacted: index_key, status, schema_version,
	// attributes, sensitive_attributes, private, dependencies and every other
	// field the writing CLI put there, in the writer's key order.
	Object []byte

	// Dependencies are the addresses this instance depends on, from the
	// object's "dependencies" list.
	Dependencies []string

	// Hash is the content address of Resource and Object's exact bytes
	// together. Equal (and CanonicalHash) compare meaning instead.
	Hash Hash

	// fragment is the object as it appeared in the posted document, and
	// canonical reports whether rendering Object in fragmentFormat gives
	// back exactly fragment. Both are unset for instances loaded from a store;
	// Detach drops fragment and keeps the rest. fragHash and fragSum hash
	// fragment (fragHash with the resource header), two independent 64-bit
	// keyed hashes, and fragLen is its length: what finds the instance again
	// in the next document (see ParseReusing) without keeping the document.
	// objFirst is &Object[0] as parsed: an Instance copied and given another
	// Object no longer trusts what it knew of its fragment. A lean instance
	// (see Lean) has neither Object nor objFirst, and canon is then its
	// CanonicalHash.
	fragment       []byte
	fragmentFormat Format
	canonical      bool
	fragHash       uint64
	fragSum        uint64
	fragLen        int
	fragOff        int64 // where the fragment starts in its document
	objFirst       *byte
	canon          Hash
	// spelling is SHA-256 over fragment, its format and resource header,
	// set by a lean parse (zero when not known): see Spelling.
	spelling Hash
}

// parsedAs reports whether in still knows the fragment it was parsed from
// (its hashes, whether or not it still holds its bytes, or its object).
func (in *Instance) parsedAs() bool {
	return in.fragLen > 0 && (len(in.Object) > 0 && &in.Object[0] == in.objFirst || in.lean())
}

// IsLean reports whether in is lean (see State.Lean, ParseOptions.Lean):
// its Object is nil, and ObjectFrom reads it back from its document. Only
// Parse and RenderIndexTo make lean instances, from objects they checked.
func (in *Instance) IsLean() bool { return in.lean() }

// lean reports whether in is an instance of a lean state: it knows its
// fragment and canonical hash, not its object.
func (in *Instance) lean() bool {
	return in.Object == nil && in.objFirst == nil && in.fragLen > 0 && !in.canon.IsZero()
}

// hasFragment reports whether in still has the fragment it was parsed with.
func (in *Instance) hasFragment() bool {
	return in.fragment != nil && in.parsedAs()
}

// copyable reports whether Render in format f may copy the fragment.
func (in *Instance) copyable(f Format) bool {
	return in.canonical && in.fragmentFormat == f && in.hasFragment()
}

// Output is one root module output value.
type Output struct {
	Name string
	// Object is the output's compact JSON: {"value":…,"type":…,"sensitive":…}
	// in the writer's key order.
	Object []byte
	// Hash is the content address of Object's exact bytes; Equal compares
	// meaning.
	Hash Hash
}

// State is a parsed tfstate version 4 document. Instances and Outputs are in
// the order Terraform writes them (see Sort).
type State struct {
	Version          int // always 4
	TerraformVersion string
	Serial           uint64
	Lineage          string
	Outputs          []Output
	Instances        []Instance
	// CheckResults is the compact "check_results" value; nil means null.
	CheckResults []byte
	// Format is the layout of the parsed document (FormatIndent for a state
	// built in memory).
	Format Format
}

// Detach makes s keep nothing of the document it was parsed from: each
// instance drops its fragment, the bytes Render copies when it can, and
// keeps what ParseReusing needs to find it again in the next document (the
// fragment's length and hashes). A parsed state holds the whole posted
// document alive through its fragments; a detached one holds only its
// objects, and renders them (as fast, but not by copying). s must not be
// in use elsewhere while it is detached; a state with no fragment is left
// as it is, so detaching one that others read is safe.
func (s *State) Detach() {
	for i := range s.Instances {
		if in := &s.Instances[i]; in.fragment != nil {
			in.fragment = nil
		}
	}
}

// Lean makes s an index of the document it was parsed from (or rendered
// to by RenderIndexTo): each instance that knows its fragment there drops
// its object and fragment, and keeps its resource header, key, status,
// dependencies, Hash, canonical hash (computed first) and what ParseWith
// needs to find it again in the next document. A lean state so tells what
// the next document changed (ParseWith, Equal) at the cost of its headers,
// a fraction of its objects' bytes; it does not render (RenderTo fails
// with ErrLean), and its instances' Object is nil. Instances that know no
// fragment keep their objects; outputs and check results are kept. s must
// not be in use elsewhere.
func (s *State) Lean() {
	for i := range s.Instances {
		in := &s.Instances[i]
		switch {
		case in.lean():
		case in.parsedAs():
			in.canon = in.CanonicalHash()
			in.Object, in.objFirst = nil, nil
		default:
			continue
		}
		in.fragment = nil
	}
}

// IsLean reports whether some instance of s is lean (see Lean): s does not
// render, and the objects of those instances are not in it.
func (s *State) IsLean() bool {
	for i := range s.Instances {
		if s.Instances[i].lean() {
			return true
		}
	}
	return false
}

/*
Package graph turns tfstate version 4 documents into a normalized graph of
resource instances and back, byte for byte.

A State is the document's metadata (lineage, serial, terraform_version,
check_results), its root outputs, and its resource instances, each an
Instance identified by its canonical address plus deposed key (Instance.ID)
and content-addressed by Hash. Dependencies between instances are the
addresses each one lists.

# Basics

Parse reads what Terraform (indented JSON) and OpenTofu (compact JSON) write;
Render writes a State back the way either CLI would; Diff says which
instances and outputs two states add, remove or change:

	prev, err := graph.Parse(body)
	next, err := graph.ParseReusing(nextBody, prev) // the same result, cheaper
	changes := graph.Diff(prev, next)              // Added, Removed, Changed, …
	out := next.Render(next.Format)                // == nextBody for CLI output

Every field of every instance object survives as Instance.Object, the
object's compact JSON in the writer's key order, so an instance is stored as
(Resource, Object) and rebuilt with NewInstance. A state rebuilt that way,
sorted with Sort and rendered, gives the same bytes the CLI wrote.

# Identity

An instance has two addresses. Hash is over its exact bytes: what a store
keeps the object under, so any spelling it was given comes back as it was.
CanonicalHash is over its canonical form (Canonical: RFC 8785's sorted keys
and minimal escapes, numbers by exact decimal value), and Equal compares
that way: an object that Python's json, jq or Go's encoding/json
re-serialized is Equal to the original, and Diff does not count it as
changed.

	a.Equal(&b)         // same meaning, however spelled
	graph.Canonical(v)  // {"a":1,"b":"<"} for {"b":"\u003c","a":1.0}

# Cost

Parsing is one validating pass over the document by a hand-written scanner,
several times faster than encoding/json. ParseReusing takes every instance
whose bytes did not change from the previous state, so a POST that changes 2
of 10,000 instances compacts and hashes 2 instances. Equal canonicalizes
only objects whose bytes differ, so comparing the CLIs' own output, where
an unchanged object keeps its bytes, costs no canonicalization at all. Render copies the posted
bytes of instances that were already in the writer's exact layout, so
rendering a freshly parsed document costs about a copy.

# Caveats

Resources without instances are dropped: an instance graph has nothing to
hold them, and Terraform prunes them on its next write anyway. Unknown
top-level and resource-level fields are dropped too, as both CLIs drop them;
unknown instance fields are kept. A client-side encrypted OpenTofu state
cannot be read at all: Parse returns ErrEncrypted for exactly OpenTofu's
envelope, and an *EncryptionError for any other document with a top-level
encryption_version.
*/
package graph

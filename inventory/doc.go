// Package inventory answers "where is it?" across states: a search over
// the current versions of every state a caller may read, and the objects
// that more than one state records.
//
// Both read the clear copies of instance objects with their sensitive
// values masked (graph.MaskedInstanceObject), so a secret is never
// matched, counted as an identity, nor shown. Both stream: a store hands
// rows one at a time to a callback, and a search stops reading at its
// limit, so memory does not grow with the fleet.
//
// The duplicates do not read every object: each commit records, on the
// objects it writes, their IdentityKey (the type, and a hash of the
// identity the duplicates rule picks, from the masked object), and a
// store groups those keys through an index and reads only the objects of
// the keys more than one state holds.
//
// # Basics
//
//	q, err := inventory.ParseQuery(inventory.Filters{Type: "aws_instance", Attr: []string{"ami=ami-123"}})
//	if err != nil { ... } // *kilolock.InvalidError: a 400 with a hint
//	page, err := inventory.Search(ctx, store, q)
//	for _, h := range page.Hits { fmt.Println(h.State, h.Version, h.Address, h.Paths) }
//	// page.Next, when not "", is the cursor of the next page.
//
// # Caveats
//
// A scope (Query.Scope) of nil is the operator's: every state. A tenant's
// scope lists its environments' state-name prefixes, and the store
// applies it in SQL, so rows of other tenants never leave the database.
//
// A search by text of MinIndexedText characters or more reads only the
// objects whose SearchText holds it, through the store's text index of
// the current objects (a commit indexes the objects it writes, masked);
// a shorter text reads every current object its other filters leave.
package inventory

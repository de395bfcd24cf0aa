/*
Package kilolock is Terraform and OpenTofu state without the global lock: a
state backend engine that keeps state as a normalized, versioned graph in a
database instead of one blob behind one lock.

It is a library first. The kld server and the kl CLI are thin wrappers around
what this package and its subpackages export, so a platform can embed the
engine in its own Go service or CI runner.

# Package map

This package is the public face and the engine's core: State (its content
a Graph), Version, Lock, Reservation, the Store interface, the Engine (read, write,
commit, load), the errors and the audit vocabulary (Caller, AuditEntry).
Every feature has a folder of its own:

	graph/          tfstate v4 <-> normalized graph; identity; Diff; slices, cones;
	                sensitive masking and attribute diffs
	merge/          3-way merge at instance granularity: Merge, Resolve
	reserve/        reservations: patterns, index, plan analysis, waiting
	quota/          soft and hard limits, admission of a plan
	keyring/        keys of encryption at rest
	tenancy/        workspaces, environments, tokens, grants, Control, scoped SQL
	history/        show, diff, address history, rollback, tags, search, cones,
	                slices, state rm/mv, moves between states, import and export
	drift/          drift records of refresh-only checks
	retention/      retention policies and pruning; backup and restore
	applyrun/       apply runs of kl apply --orchestrated: start, reserve, end
	inventory/      search across states; objects recorded by more than one state
	store/          Store implementations (sqlite/, postgres/ over sqlstore/),
	                storekit/ (rules only stores run), storetest/ (one suite)
	httpbackend/    net/http handler: the Terraform backend protocol + JSON API

graph, merge, reserve, quota and keyring import nothing of this package;
it composes them. The feature packages sit on the Engine through a small
exported surface, as httpbackend does: Engine.State, Resolve, VersionGraph
and DepGraph read a version, Engine.Edit commits a server-side edit
(CommitTogether several states' at once, as a move between states),
Engine.Store, Logger and Now give the rest. They call the engine as
functions taking it after ctx: history.Rollback(ctx, e, name, ref, opts).
docs/architecture.md draws the layers and the way of a POST body.

# Basics

A Store keeps states, their immutable versions and their locks. Open one from
a URL with store.Open: a file path for the embedded SQLite store (pure Go, no
cgo, no server) or a postgres:// URL for PostgreSQL. An Engine on a Store
parses what Terraform writes, turns it into changes against the current
version and commits them:

	st, err := sqlite.Open(ctx, "kilolock.db")
	if err != nil {
		return err
	}
	defer st.Close()
	e := kilolock.NewEngine(st, kilolock.Options{})

	lock, err := e.Lock(ctx, "network", kilolock.LockInfo{ID: id, Who: "ci@runner"})
	res, err := e.Write(ctx, "network", tfstateBytes, kilolock.WriteOptions{LockID: lock.Info.ID})
	doc, err := e.Read(ctx, "network") // doc.Bytes are exactly what was written
	_, err = e.Unlock(ctx, "network", id, false)

To serve the Terraform HTTP backend protocol, mount httpbackend.New(e, …) on
any mux, behind any middleware.

# Versions

Every write appends a Version that records its source, actor, lock id, serial
and counts of added, changed and removed instances; nothing is overwritten.
A version costs what changed, not the size of the state: instance objects are
content-addressed and which of them a version holds is recorded as intervals.
Reading back a version that came straight from a client gives the client's
exact bytes.

What changed is decided by meaning (graph.Instance.Equal): a state another
JSON writer re-serialized (sorted keys, other escapes, numbers spelled
otherwise) changes no instance, costs no row per instance and conflicts
with nothing; the store keeps the earlier bytes of such objects, and the
version keeps what it needs to serve the posted bytes (a delta against its
own rendering when that is small, else the compressed document).

# Tenancy

A store that also implements tenancy.TenantStore keeps workspaces,
environments, members, automation tokens, personal access tokens and their
grants, state holds and an audit log. tenancy.Control changes them,
validating and auditing every change (kld's control API and kl --database
both run through it); the authenticated lane of httpbackend decides each
request on one TenantStore.Access read. Token secrets are shown once and
stored only as SHA-256 hashes.

# Caveats

Client-side encrypted OpenTofu states are stored as opaque blobs: locking,
history, tags, whole-version rollback and whole-document diffs work, graph
features answer ErrEncrypted. The serial and lineage the envelope carries in
the clear are recorded and guarded as a plaintext state's (an envelope
without them is refused, encrypted_state_incomplete); an optimistic write
that is or meets an encrypted version cannot be merged, so it goes in only as
a fast-forward. A rollback to an encrypted version takes that version's
serial, which the server cannot raise inside the encryption. Only OpenTofu's
envelope is opaque (the keys serial, lineage, meta, encrypted_data and
encryption_version, nothing else); any other document with an
encryption_version is refused (ambiguous_encryption), so it cannot pass for
opaque to skip the guards. A state, or an environment, may require
client-side encryption (State.ClientEncryptionRequired): plaintext
writes are then refused (ReasonClientEncryptionRequired); the server cannot
prove that an envelope's encrypted_data is ciphertext. Versions stored
encrypted before KiloLock read envelopes keep the serial recorded then (the
state's, often 0).

Rolling back state does not roll back infrastructure.
*/
package kilolock

-- KiloLock schema, version 22: what lets a write on a state kld has not
-- cached find the unchanged instances of its body by their bytes (the
-- SQLite store's migration 20). For an interval opened by a posted
-- document whose instance was spelled as the writing CLI renders it,
-- spelling is graph.Instance.Spelling (SHA-256 over the instance's bytes
-- as posted, the document's layout and the resource header) and
-- canonical_hash its canonical hash (RFC 8785): a later body that spells
-- the instance so takes both instead of compacting and hashing it. NULL
-- (rows written before, versions the server made, states sealed at rest)
-- is unknown: such an instance is parsed in full, as before.
ALTER TABLE instance_intervals ADD COLUMN spelling bytea;
ALTER TABLE instance_intervals ADD COLUMN canonical_hash bytea;

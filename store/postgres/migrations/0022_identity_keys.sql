-- KiloLock schema, version 22: each current instance object's identity
-- key, for the duplicates across states (the SQLite store's migration
-- 20). A commit records, on each interval it opens, inventory.IdentityKey
-- of the object: ident_key is how the real object is told apart
-- (identity, arn, self_link, id; '' for a data source, a deposed object
-- or one without any) and ident_hash 16 bytes of a hash of the type, it and its
-- value, worked out from the masked object (no sensitive value is ever a
-- key). NULL is not worked out yet: the intervals current when this
-- migration ran, and those of a backup of an older release, which the
-- store fills in when it opens (and after a restore), through
-- instance_intervals_identity_pending.
--
-- The duplicates are then a GROUP BY over instance_intervals_identity,
-- which holds only the current objects that have a key, in key order.
ALTER TABLE instance_intervals ADD COLUMN ident_key TEXT;
ALTER TABLE instance_intervals ADD COLUMN ident_hash BYTEA;
CREATE INDEX instance_intervals_identity ON instance_intervals (ident_hash, state_id, type) WHERE valid_to IS NULL AND ident_key <> '';
CREATE INDEX instance_intervals_identity_pending ON instance_intervals (state_id) WHERE valid_to IS NULL AND ident_key IS NULL;

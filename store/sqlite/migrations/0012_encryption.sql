-- KiloLock schema, version 12: encryption at rest (see kilolock.KeyStore).
--
-- state_keys holds each state's data key, wrapped (AES-256-GCM) by the
-- key-encryption key key_id names (a fingerprint, never the key). A state
-- has one from the first write that seals something, for good.
--
-- A payload holding values Terraform marks sensitive keeps the whole
-- object sealed by its state's data key in payloads.sealed, and in body
-- the object with those values masked, so the views show every other
-- attribute; its hash is then a keyed hash of the content hash, not the
-- content hash. A raw document kept sealed has version_raw.sealed set.

CREATE TABLE state_keys (
    state_id   INTEGER PRIMARY KEY REFERENCES states (id) ON DELETE CASCADE,
    key_id     TEXT    NOT NULL,
    wrapped    BLOB    NOT NULL,
    created_at TEXT    NOT NULL,
    wrapped_at TEXT    NOT NULL
);
CREATE INDEX state_keys_key ON state_keys (key_id);

ALTER TABLE payloads ADD COLUMN sealed BLOB;
ALTER TABLE version_raw ADD COLUMN sealed BOOLEAN NOT NULL DEFAULT false;

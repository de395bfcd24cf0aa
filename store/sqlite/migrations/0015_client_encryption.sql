-- KiloLock schema, version 15: OpenTofu's client-side encrypted states.
-- The PostgreSQL store has the same columns (its migration 17).
--
-- require_client_encryption: the state takes only client-side encrypted
-- writes (kl state config NAME --require-client-encryption), or every state
-- of the environment does (an operator's setting, kl env config).
-- client_encryption: what the current version's envelope says in the
-- clear (kilolock.ClientEncryption as JSON: encryption_version and the
-- key providers meta names, never their material), NULL when the current
-- version is plaintext. A state whose current version was stored encrypted
-- before this migration is marked so, its key providers unknown until its
-- next write.
ALTER TABLE states ADD COLUMN require_client_encryption BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE states ADD COLUMN client_encryption TEXT;
ALTER TABLE environments ADD COLUMN require_client_encryption BOOLEAN NOT NULL DEFAULT false;
UPDATE states SET client_encryption = '{"encryption_version":"","key_providers":[]}'
WHERE current_version_id IN (SELECT id FROM state_versions WHERE format = 'opaque');

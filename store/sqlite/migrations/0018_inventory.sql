-- KiloLock schema, version 18: the inventory across states (package
-- inventory). The PostgreSQL store has the same index (its migration 20).
--
-- A search by type (kl search --type) and the duplicates, read by type,
-- find the current objects of one type in every state through this index,
-- in (state_id, instance_id) order, as the scan pages them, instead of
-- walking every state's current intervals. IF NOT EXISTS: a test that
-- replays an older migration replays this one too.
CREATE INDEX IF NOT EXISTS instance_intervals_current_type ON instance_intervals (type, state_id, instance_id) WHERE valid_to IS NULL;

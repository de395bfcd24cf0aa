-- KiloLock schema, version 5: tokens may expire. NULL: never. The
-- PostgreSQL store has the same column.

ALTER TABLE tokens ADD COLUMN expires_at TEXT;

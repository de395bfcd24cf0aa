-- KiloLock schema, version 5: tokens may expire. NULL: never.

ALTER TABLE tokens ADD COLUMN expires_at TIMESTAMPTZ;

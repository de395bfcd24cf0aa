-- KiloLock schema, version 17: moves of instances between states.
-- The PostgreSQL store has the same table (its migration 19).
--
-- One row per move (kl state mv --to-state, split, merge): the two
-- versions it made in one transaction, each side's history naming the
-- other through it. IF NOT EXISTS: a test that replays earlier migrations
-- meets it already there.
CREATE TABLE IF NOT EXISTS state_moves (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    from_state_id INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    from_version  BIGINT  NOT NULL,
    to_state_id   INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    to_version    BIGINT  NOT NULL,
    instances     BIGINT  NOT NULL,
    actor         TEXT    NOT NULL,
    created_at    TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS state_moves_from ON state_moves (from_state_id);
CREATE INDEX IF NOT EXISTS state_moves_to ON state_moves (to_state_id);

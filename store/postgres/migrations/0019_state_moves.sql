-- KiloLock schema, version 19: moves of instances between states.
-- The SQLite store has the same table (its migration 17).
--
-- One row per move (kl state mv --to-state, split, merge): the two
-- versions it made in one transaction, each side's history naming the
-- other through it. IF NOT EXISTS: a test that replays earlier migrations
-- meets it already there.
CREATE TABLE IF NOT EXISTS state_moves (
    id            BIGSERIAL PRIMARY KEY,
    from_state_id BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    from_version  BIGINT NOT NULL,
    to_state_id   BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    to_version    BIGINT NOT NULL,
    instances     BIGINT NOT NULL,
    actor         TEXT   NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS state_moves_from ON state_moves (from_state_id);
CREATE INDEX IF NOT EXISTS state_moves_to ON state_moves (to_state_id);

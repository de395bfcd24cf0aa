-- KiloLock schema, version 2: refused commits, kept so that users can see
-- why a client that shows only "HTTP error: 409" failed (`kl conflicts`).
-- The relation names and user-visible columns are the SQLite store's.
--
-- addresses is JSON array text of the addresses in conflict (instance
-- addresses and "output.NAME"); the view casts it to jsonb. The winner_*
-- columns are all NULL when no winner was recorded; a winner that wrote
-- without a lock has lock id ''.

CREATE TABLE rejected_commits (
    id             BIGSERIAL PRIMARY KEY,
    state_id       BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    lock_id        TEXT NOT NULL DEFAULT '',
    actor          TEXT NOT NULL DEFAULT '',
    reason         TEXT NOT NULL,
    addresses      TEXT NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(addresses::jsonb) = 'array'),
    latest_serial  BIGINT NOT NULL,
    base_serial    BIGINT NOT NULL,
    winner_actor   TEXT NULL,
    winner_lock_id TEXT NULL,
    winner_version BIGINT NULL,
    hint           TEXT NOT NULL DEFAULT '',
    CHECK ((winner_version IS NULL) = (winner_actor IS NULL) AND (winner_version IS NULL) = (winner_lock_id IS NULL))
);
-- Rejections lists a state's newest first; the cascade from states finds
-- a state's rows by it too.
CREATE INDEX rejected_commits_state ON rejected_commits (state_id, id);

CREATE VIEW rejected_commit_history AS
SELECT s.name AS state,
       r.created_at,
       r.lock_id,
       r.actor,
       r.reason,
       r.addresses::jsonb AS addresses,
       r.latest_serial,
       r.base_serial,
       r.winner_actor,
       r.winner_lock_id,
       r.winner_version,
       r.hint
FROM rejected_commits r
JOIN states s ON s.id = r.state_id;

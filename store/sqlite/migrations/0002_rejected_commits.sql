-- KiloLock schema, version 2: refused commits, kept so that users can see
-- why a client that shows only "HTTP error: 409" failed (`kl conflicts`).
-- The PostgreSQL store has the same relation names and user-visible
-- columns.
--
-- addresses is a JSON array of the addresses in conflict (instance
-- addresses and "output.NAME"). The winner_* columns are all NULL when no
-- winner was recorded; a winner that wrote without a lock has lock id ''.

CREATE TABLE rejected_commits (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    state_id       INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    created_at     TEXT    NOT NULL,
    lock_id        TEXT    NOT NULL,
    actor          TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    addresses      TEXT    NOT NULL CHECK (json_valid(addresses) AND json_type(addresses) = 'array'),
    latest_serial  BIGINT  NOT NULL,
    base_serial    BIGINT  NOT NULL,
    winner_actor   TEXT,
    winner_lock_id TEXT,
    winner_version BIGINT,
    hint           TEXT    NOT NULL,
    CHECK ((winner_version IS NULL) = (winner_actor IS NULL) AND (winner_version IS NULL) = (winner_lock_id IS NULL))
);
-- Rejections lists a state's newest first; the cascade from states finds
-- a state's rows by it too.
CREATE INDEX rejected_commits_state ON rejected_commits (state_id, id);

CREATE VIEW rejected_commit_history AS
SELECT s.name           AS state,
       r.created_at     AS created_at,
       r.lock_id        AS lock_id,
       r.actor          AS actor,
       r.reason         AS reason,
       r.addresses      AS addresses,
       r.latest_serial  AS latest_serial,
       r.base_serial    AS base_serial,
       r.winner_actor   AS winner_actor,
       r.winner_lock_id AS winner_lock_id,
       r.winner_version AS winner_version,
       r.hint           AS hint
FROM rejected_commits AS r
JOIN states AS s ON s.id = r.state_id;

-- KiloLock schema, version 7: plans' shared read locks, and apply runs
-- with their reservations. The PostgreSQL store has the same relations
-- (its migration 8).

-- A plan's lock is a shared read lock (granted beside a writer); an apply
-- run's lock names its run.
ALTER TABLE locks ADD COLUMN shared BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE locks ADD COLUMN run_id TEXT NOT NULL DEFAULT '';
-- Whether plans take shared read locks on the state; NULL follows the
-- server's default.
ALTER TABLE states ADD COLUMN shared_plan_locks BOOLEAN;

-- One orchestrated apply. expires_at is renewed_at plus the lease; a run
-- waiting or active past it reads as expired.
CREATE TABLE apply_runs (
    id            TEXT    PRIMARY KEY,
    state_id      INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    actor         TEXT    NOT NULL,
    info          TEXT    NOT NULL,
    status        TEXT    NOT NULL CHECK (status IN ('waiting', 'active', 'succeeded', 'failed', 'aborted')),
    source_serial BIGINT  NOT NULL,
    lease_ms      BIGINT  NOT NULL,
    created_at    TEXT    NOT NULL,
    acquired_at   TEXT,
    renewed_at    TEXT    NOT NULL,
    expires_at    TEXT    NOT NULL,
    ended_at      TEXT,
    ended_by      TEXT    NOT NULL DEFAULT '',
    reason        TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX apply_runs_state ON apply_runs (state_id, status, expires_at);
CREATE INDEX apply_runs_created ON apply_runs (state_id, created_at);

-- What a run reserves. held is true from the moment the run takes its
-- reservations until it ends; the rows stay as the run's record.
CREATE TABLE run_reservations (
    run_id   TEXT    NOT NULL REFERENCES apply_runs (id) ON DELETE CASCADE,
    state_id INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    pattern  TEXT    NOT NULL,
    mode     TEXT    NOT NULL CHECK (mode IN ('read', 'write')),
    held     BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, pattern)
);
CREATE INDEX run_reservations_held ON run_reservations (state_id, pattern) WHERE held;

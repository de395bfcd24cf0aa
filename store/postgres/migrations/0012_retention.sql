-- KiloLock schema, version 12: retention. The SQLite store has the
-- same relations (its migration 11).
--
-- retention_policies: keep the last keep_last versions and/or those of the
-- last keep_days days (0: no such limit; both 0: keep everything, which
-- exempts a state or an environment from a broader policy). scope is
-- 'server' (target ''), 'environment' (target: an environment's public id)
-- or 'state' (target: the state's name); the most specific one applies.
CREATE TABLE retention_policies (
    scope      TEXT   NOT NULL CHECK (scope IN ('server', 'environment', 'state')),
    target     TEXT   NOT NULL,
    keep_last  BIGINT NOT NULL CHECK (keep_last >= 0),
    keep_days  BIGINT NOT NULL CHECK (keep_days >= 0),
    updated_at TIMESTAMPTZ NOT NULL,
    updated_by TEXT   NOT NULL,
    PRIMARY KEY (scope, target),
    CHECK ((scope = 'server') = (target = ''))
);

-- Versions retention must keep until expires_at, whatever the policy: the
-- target of a rollback plan, so that the plan can still be applied.
CREATE TABLE version_pins (
    state_id   BIGINT  NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    number     BIGINT  NOT NULL,
    reason     TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (state_id, number, reason)
);

-- The marker of each pruned version: what it was, when, by whom and
-- under which policy. History shows them where the versions were.
CREATE TABLE pruned_versions (
    state_id   BIGINT  NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    number     BIGINT  NOT NULL,
    version_id BIGINT  NOT NULL,
    serial     BIGINT  NOT NULL,
    source     TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    pruned_at  TIMESTAMPTZ NOT NULL,
    pruned_by  TEXT    NOT NULL,
    policy     TEXT    NOT NULL,
    PRIMARY KEY (state_id, number)
);

-- Pruning deletes a payload once no interval refers to it: one probe each.
CREATE INDEX instance_intervals_hash ON instance_intervals (state_id, hash);
CREATE INDEX output_intervals_hash ON output_intervals (state_id, hash);

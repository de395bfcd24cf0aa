-- KiloLock schema, version 8: quotas. The PostgreSQL store has the same
-- relations (its migration 9).
--
-- What quotas count: the managed resources' current objects of a version
-- (quota.Counts: mode 'managed', no deposed key), kept with the version
-- and computed from each commit's changes, so that a commit's check costs
-- what it changes. Versions written before this migration are counted here
-- once.
ALTER TABLE state_versions ADD COLUMN managed_count BIGINT NOT NULL DEFAULT 0;
UPDATE state_versions SET managed_count = (
    SELECT count(*) FROM instance_intervals i
    WHERE i.state_id = state_versions.state_id
      AND i.valid_from <= state_versions.number
      AND (i.valid_to IS NULL OR i.valid_to > state_versions.number)
      AND i.mode = 'managed' AND i.deposed = '');

-- A tenant's state is named ws_….env_….NAME (kilolock.TenantStateName):
-- its environment is the text between the first and the second '.'
-- (kilolock.SplitTenantStateName), NULL for a state of the local lane.
ALTER TABLE states ADD COLUMN environment_id TEXT GENERATED ALWAYS AS (
    CASE WHEN substr(name, 1, 3) = 'ws_' AND instr(name, '.') > 0
          AND instr(substr(name, instr(name, '.') + 1), '.') > 0
    THEN substr(substr(name, instr(name, '.') + 1), 1, instr(substr(name, instr(name, '.') + 1), '.') - 1)
    END) VIRTUAL;
CREATE INDEX states_environment ON states (environment_id) WHERE environment_id IS NOT NULL;

-- Limits, by scope: 'state' (target: the state's name), 'environment'
-- (its public id), 'workspace_states' and 'workspace_environments' (a
-- workspace id: the defaults of its states and of its environments). An
-- unlimited row overrides a default above it. Keyed by name, as
-- state_holds is: a limit may be set before its state exists.
CREATE TABLE quotas (
    scope      TEXT    NOT NULL CHECK (scope IN ('state', 'environment', 'workspace_states', 'workspace_environments')),
    target     TEXT    NOT NULL,
    soft       BIGINT  NOT NULL,
    hard       BIGINT  NOT NULL,
    unlimited  BOOLEAN NOT NULL,
    updated_at TEXT    NOT NULL,
    CHECK ((unlimited AND soft = 0 AND hard = 0) OR (NOT unlimited AND hard >= 1 AND soft >= 0 AND soft <= hard)),
    PRIMARY KEY (scope, target)
);

-- Commits a quota refused (level 'exceed', version 0) or warned about
-- (level 'warn', the version the commit made), for kl quota status: the
-- CLIs print only "HTTP error: 403".
CREATE TABLE quota_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    state_id   INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    created_at TEXT    NOT NULL,
    level      TEXT    NOT NULL CHECK (level IN ('warn', 'exceed')),
    scope      TEXT    NOT NULL CHECK (scope IN ('state', 'environment')),
    target     TEXT    NOT NULL,
    limit_from TEXT    NOT NULL,
    current_count BIGINT NOT NULL,
    result_count  BIGINT NOT NULL,
    soft       BIGINT  NOT NULL,
    hard       BIGINT  NOT NULL,
    version    BIGINT  NOT NULL,
    lock_id    TEXT    NOT NULL,
    actor      TEXT    NOT NULL
);
CREATE INDEX quota_events_state ON quota_events (state_id, level, id);

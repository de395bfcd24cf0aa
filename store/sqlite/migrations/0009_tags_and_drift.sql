-- KiloLock schema, version 9: tags, and drift checks with what they found.
-- The PostgreSQL store has the same relations and user-visible columns
-- (its migration 10).

-- A tag names one version of its state.
CREATE TABLE state_tags (
    state_id    INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    version     BIGINT  NOT NULL,
    description TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    created_at  TEXT    NOT NULL,
    PRIMARY KEY (state_id, name)
);

-- One drift check: a refresh-only plan of the real CLI against version
-- (a number) of the state. scope is a JSON array of the instance ids it
-- refreshed, NULL when it refreshed the whole state.
CREATE TABLE drift_checks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    state_id   INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    version    BIGINT  NOT NULL,
    checked_at TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    scope      TEXT    CHECK (scope IS NULL OR (json_valid(scope) AND json_type(scope) = 'array')),
    drifted    INT     NOT NULL
);
CREATE INDEX drift_checks_state ON drift_checks (state_id, id);

-- What a check found drifted: one instance object, and per attribute path
-- its recorded and its real value (sensitive ones masked), as a JSON
-- array. A record is open until a later check that refreshed the
-- instance finds it clean (closed_by) or a version after the one checked
-- changes the instance (read from instance_intervals, never written).
CREATE TABLE drift_records (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    check_id    BIGINT  NOT NULL REFERENCES drift_checks (id) ON DELETE CASCADE,
    state_id    INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    instance_id TEXT    NOT NULL,
    address     TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('changed', 'deleted')),
    changes     TEXT    NOT NULL CHECK (json_valid(changes) AND json_type(changes) = 'array'),
    version     BIGINT  NOT NULL,
    closed_by   BIGINT
);
CREATE INDEX drift_records_open ON drift_records (state_id, instance_id) WHERE closed_by IS NULL;
CREATE INDEX drift_records_check ON drift_records (check_id);

-- The open drift of every instance: what the latest check that refreshed
-- it found, unless a later version changed it since.
CREATE VIEW resource_drift AS
SELECT s.name         AS state,
       d.address      AS address,
       d.instance_id  AS instance_id,
       d.type         AS type,
       d.kind         AS kind,
       d.changes      AS changes,
       d.version      AS version,
       c.checked_at   AS checked_at,
       c.actor        AS checked_by,
       c.id           AS check_id
FROM drift_records AS d
JOIN drift_checks AS c ON c.id = d.check_id
JOIN states AS s ON s.id = d.state_id
WHERE d.closed_by IS NULL
  AND NOT EXISTS (SELECT 1 FROM instance_intervals AS i
                  WHERE i.state_id = d.state_id AND i.instance_id = d.instance_id
                    AND (i.valid_from > d.version OR i.valid_to > d.version));

-- KiloLock schema, version 10: tags, and drift checks with what they
-- found. The SQLite store has the same relations and user-visible columns
-- (its migration 9); see it for what each holds.

CREATE TABLE state_tags (
    state_id    BIGINT      NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    name        TEXT        NOT NULL,
    version     BIGINT      NOT NULL,
    description TEXT        NOT NULL,
    actor       TEXT        NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (state_id, name)
);

CREATE TABLE drift_checks (
    id         BIGSERIAL   PRIMARY KEY,
    state_id   BIGINT      NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    version    BIGINT      NOT NULL,
    checked_at TIMESTAMPTZ NOT NULL,
    actor      TEXT        NOT NULL,
    scope      TEXT        CHECK (scope IS NULL OR left(scope, 1) = '['),
    drifted    INT         NOT NULL
);
CREATE INDEX drift_checks_state ON drift_checks (state_id, id);

CREATE TABLE drift_records (
    id          BIGSERIAL PRIMARY KEY,
    check_id    BIGINT    NOT NULL REFERENCES drift_checks (id) ON DELETE CASCADE,
    state_id    BIGINT    NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    instance_id TEXT      NOT NULL,
    address     TEXT      NOT NULL,
    type        TEXT      NOT NULL,
    kind        TEXT      NOT NULL CHECK (kind IN ('changed', 'deleted')),
    changes     TEXT      NOT NULL CHECK (left(changes, 1) = '['),
    version     BIGINT    NOT NULL,
    closed_by   BIGINT
);
CREATE INDEX drift_records_open ON drift_records (state_id, instance_id) WHERE closed_by IS NULL;
CREATE INDEX drift_records_check ON drift_records (check_id);

-- changes is jsonb where jsonb holds it (see kl_jsonb_ok), else NULL.
CREATE VIEW resource_drift AS
SELECT s.name        AS state,
       d.address,
       d.instance_id,
       d.type,
       d.kind,
       CASE WHEN kl_jsonb_ok(d.changes) THEN d.changes::jsonb END AS changes,
       d.version,
       c.checked_at,
       c.actor       AS checked_by,
       c.id          AS check_id
FROM drift_records d
JOIN drift_checks c ON c.id = d.check_id
JOIN states s ON s.id = d.state_id
WHERE d.closed_by IS NULL
  AND NOT EXISTS (SELECT 1 FROM instance_intervals i
                  WHERE i.state_id = d.state_id AND i.instance_id = d.instance_id
                    AND (i.valid_from > d.version OR i.valid_to > d.version));

-- KiloLock schema, version 1. The relation names and user-visible columns
-- are the same as the SQLite store's, so that queries work on both.

-- One row per state. current_version is the number of the current version
-- (0 before the first write), current_version_id its state_versions.id.
CREATE TABLE states (
    id                   BIGSERIAL PRIMARY KEY,
    name                 TEXT NOT NULL UNIQUE,
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    lineage              TEXT NOT NULL DEFAULT '',
    current_version      BIGINT NOT NULL DEFAULT 0,
    current_version_id   BIGINT NOT NULL DEFAULT 0,
    serial               BIGINT NOT NULL DEFAULT 0,
    lock_mode            TEXT NOT NULL DEFAULT 'exclusive' CHECK (lock_mode IN ('exclusive', 'optimistic')),
    allow_lineage_change BOOLEAN NOT NULL DEFAULT false
);

-- One row per version: its metadata. Versions are immutable.
CREATE TABLE state_versions (
    id                BIGSERIAL PRIMARY KEY,
    state_id          BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    number            BIGINT NOT NULL,
    serial            BIGINT NOT NULL,
    lineage           TEXT NOT NULL,
    terraform_version TEXT NOT NULL,
    source            TEXT NOT NULL,
    actor             TEXT NOT NULL,
    lock_id           TEXT NOT NULL DEFAULT '',
    base_serial       BIGINT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    added             INT NOT NULL,
    changed           INT NOT NULL,
    removed           INT NOT NULL,
    instance_count    INT NOT NULL,
    format            TEXT NOT NULL,
    check_results     TEXT NULL,
    UNIQUE (state_id, number)
);

-- The posted document (gzip) of the versions that keep it.
CREATE TABLE version_raw (
    version_id BIGINT PRIMARY KEY REFERENCES state_versions (id) ON DELETE CASCADE,
    raw        BYTEA NOT NULL
);

-- Content-addressed compact JSON of instance and output objects, written
-- once per state. TEXT rather than jsonb keeps inserts cheap; the views cast.
CREATE TABLE payloads (
    state_id BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    hash     BYTEA NOT NULL,
    body     TEXT NOT NULL,
    PRIMARY KEY (state_id, hash)
);

-- Which instance objects each version holds: an object is in version v iff
-- valid_from <= v AND (valid_to IS NULL OR valid_to > v). A commit closes
-- the intervals of the objects it changes or removes and opens new ones.
CREATE TABLE instance_intervals (
    state_id    BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    instance_id TEXT NOT NULL,   -- address plus " (deposed object KEY)"
    address     TEXT NOT NULL,
    module      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    type        TEXT NOT NULL,
    name        TEXT NOT NULL,
    index_key   TEXT NOT NULL,   -- JSON: null, 0, "key"
    deposed     TEXT NOT NULL,
    each        TEXT NOT NULL,
    provider    TEXT NOT NULL,
    status      TEXT NOT NULL,
    hash        BYTEA NOT NULL,  -- payloads.hash
    valid_from  BIGINT NOT NULL, -- version number
    valid_to    BIGINT NULL,     -- version number; NULL while current
    PRIMARY KEY (state_id, instance_id, valid_from)
);
CREATE UNIQUE INDEX instance_intervals_current ON instance_intervals (state_id, instance_id) WHERE valid_to IS NULL;
CREATE INDEX instance_intervals_valid_from ON instance_intervals (state_id, valid_from);
CREATE INDEX instance_intervals_valid_to ON instance_intervals (state_id, valid_to);

-- Which outputs each version holds, likewise.
CREATE TABLE output_intervals (
    state_id   BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    hash       BYTEA NOT NULL,
    sensitive  BOOLEAN NOT NULL,
    valid_from BIGINT NOT NULL,
    valid_to   BIGINT NULL,
    PRIMARY KEY (state_id, name, valid_from)
);
CREATE UNIQUE INDEX output_intervals_current ON output_intervals (state_id, name) WHERE valid_to IS NULL;
CREATE INDEX output_intervals_valid_from ON output_intervals (state_id, valid_from);
CREATE INDEX output_intervals_valid_to ON output_intervals (state_id, valid_to);

-- Held locks. base_version and base_serial are what the holder read.
CREATE TABLE locks (
    state_id     BIGINT NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    lock_id      TEXT NOT NULL,
    info         TEXT NOT NULL, -- LockInfo JSON
    who          TEXT NOT NULL,
    operation    TEXT NOT NULL,
    base_version BIGINT NOT NULL,
    base_serial  BIGINT NOT NULL,
    acquired_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (state_id, lock_id)
);

-- Views for users' queries.

CREATE VIEW resources AS
SELECT s.name AS state,
       i.address,
       i.instance_id,
       i.module,
       i.mode,
       i.type,
       i.name,
       i.index_key,
       i.deposed,
       i.provider,
       i.status,
       o.body -> 'attributes' AS attributes,
       o.body -> 'sensitive_attributes' AS sensitive_attributes,
       o.body -> 'dependencies' AS dependencies
FROM instance_intervals i
JOIN states s ON s.id = i.state_id
JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
CROSS JOIN LATERAL (SELECT p.body::jsonb AS body) o
WHERE i.valid_to IS NULL;

CREATE VIEW resource_dependencies AS
SELECT r.state, r.address, d.depends_on
FROM resources r
CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(r.dependencies) = 'array' THEN r.dependencies END
) AS d (depends_on);

CREATE VIEW outputs AS
SELECT s.name AS state,
       oi.name,
       o.body -> 'value' AS value,
       o.body -> 'type' AS type,
       oi.sensitive
FROM output_intervals oi
JOIN states s ON s.id = oi.state_id
JOIN payloads p ON p.state_id = oi.state_id AND p.hash = oi.hash
CROSS JOIN LATERAL (SELECT p.body::jsonb AS body) o
WHERE oi.valid_to IS NULL;

CREATE VIEW resource_history AS
SELECT s.name AS state,
       i.address,
       i.instance_id,
       i.type,
       i.valid_from,
       i.valid_to,
       encode(i.hash, 'hex') AS hash
FROM instance_intervals i
JOIN states s ON s.id = i.state_id;

CREATE VIEW version_history AS
SELECT s.name AS state,
       v.number,
       v.serial,
       v.source,
       v.actor,
       v.lock_id,
       v.base_serial,
       v.created_at,
       v.added,
       v.changed,
       v.removed,
       v.instance_count
FROM state_versions v
JOIN states s ON s.id = v.state_id;

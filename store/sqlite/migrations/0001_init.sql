-- KiloLock schema, version 1. The PostgreSQL store keeps the same relation
-- names and user-visible columns (store/postgres/migrations), so queries
-- written against one work against the other.
--
-- A version's instances are recorded as intervals: an instance object is in
-- version v iff valid_from <= v AND (valid_to IS NULL OR valid_to > v). A
-- commit closes the intervals of the objects it changes or removes and opens
-- intervals for the ones it adds or changes, so it writes O(changes) rows.
-- Object bodies are content-addressed per state in payloads.
--
-- Timestamps are TEXT in UTC, RFC 3339 with microseconds
-- (2006-01-02T15:04:05.000000Z), so they sort as text and match the
-- precision of PostgreSQL's timestamptz. Absent strings are '' not NULL.

CREATE TABLE states (
    id                   INTEGER PRIMARY KEY,
    name                 TEXT    NOT NULL UNIQUE,
    created_at           TEXT    NOT NULL,
    lineage              TEXT    NOT NULL DEFAULT '',
    current_version      BIGINT  NOT NULL DEFAULT 0,  -- number; 0 before the first write
    current_version_id   BIGINT  NOT NULL DEFAULT 0,  -- state_versions.id; 0 before the first write
    serial               BIGINT  NOT NULL DEFAULT 0,
    lock_mode            TEXT    NOT NULL DEFAULT 'exclusive' CHECK (lock_mode IN ('exclusive', 'optimistic')),
    allow_lineage_change BOOLEAN NOT NULL DEFAULT false
);

-- AUTOINCREMENT: a version id is never reused, even after its state is
-- deleted, so it is safe as a cache key.
CREATE TABLE state_versions (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    state_id          INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    number            BIGINT  NOT NULL,
    serial            BIGINT  NOT NULL,
    lineage           TEXT    NOT NULL,
    terraform_version TEXT    NOT NULL,
    source            TEXT    NOT NULL,
    actor             TEXT    NOT NULL,
    lock_id           TEXT    NOT NULL,
    base_serial       BIGINT  NOT NULL,
    created_at        TEXT    NOT NULL,
    added             INT     NOT NULL,
    changed           INT     NOT NULL,
    removed           INT     NOT NULL,
    instance_count    INT     NOT NULL,
    format            TEXT    NOT NULL,
    check_results     TEXT,
    UNIQUE (state_id, number)
);

-- Only for versions whose Commit.Raw was not nil.
CREATE TABLE version_raw (
    version_id INTEGER PRIMARY KEY REFERENCES state_versions (id) ON DELETE CASCADE,
    raw        BLOB    NOT NULL
);

-- Compact JSON of instance objects and output objects, keyed by their
-- graph.Hash. Written insert-if-absent, never updated, deleted only with
-- the state.
CREATE TABLE payloads (
    state_id INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    hash     BLOB    NOT NULL,
    body     TEXT    NOT NULL,
    PRIMARY KEY (state_id, hash)
);

CREATE TABLE instance_intervals (
    state_id    INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    instance_id TEXT    NOT NULL,  -- graph.Instance.ID(): address plus deposed key
    address     TEXT    NOT NULL,
    module      TEXT    NOT NULL,
    mode        TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    index_key   TEXT    NOT NULL,  -- JSON text: null, 0 or "key"
    deposed     TEXT    NOT NULL,
    each        TEXT    NOT NULL,
    provider    TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    hash        BLOB    NOT NULL,  -- payloads.hash
    valid_from  BIGINT  NOT NULL,  -- version number
    valid_to    BIGINT,            -- version number; NULL while current
    PRIMARY KEY (state_id, instance_id, valid_from)
);
CREATE UNIQUE INDEX instance_intervals_current ON instance_intervals (state_id, instance_id) WHERE valid_to IS NULL;
CREATE INDEX instance_intervals_from ON instance_intervals (state_id, valid_from);
CREATE INDEX instance_intervals_to ON instance_intervals (state_id, valid_to);

CREATE TABLE output_intervals (
    state_id   INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    hash       BLOB    NOT NULL,
    sensitive  BOOLEAN NOT NULL,
    valid_from BIGINT  NOT NULL,
    valid_to   BIGINT,
    PRIMARY KEY (state_id, name, valid_from)
);
CREATE UNIQUE INDEX output_intervals_current ON output_intervals (state_id, name) WHERE valid_to IS NULL;
CREATE INDEX output_intervals_from ON output_intervals (state_id, valid_from);
CREATE INDEX output_intervals_to ON output_intervals (state_id, valid_to);

CREATE TABLE locks (
    state_id     INTEGER NOT NULL REFERENCES states (id) ON DELETE CASCADE,
    lock_id      TEXT    NOT NULL,
    info         TEXT    NOT NULL,  -- kilolock.LockInfo as JSON
    who          TEXT    NOT NULL,
    operation    TEXT    NOT NULL,
    base_version BIGINT  NOT NULL,
    base_serial  BIGINT  NOT NULL,
    acquired_at  TEXT    NOT NULL,
    PRIMARY KEY (state_id, lock_id)
);

-- Views for users' queries. JSON values are JSON text here, jsonb on
-- PostgreSQL.

-- Current resource instance objects.
CREATE VIEW resources AS
SELECT s.name                            AS state,
       i.address                         AS address,
       i.instance_id                     AS instance_id,
       i.module                          AS module,
       i.mode                            AS mode,
       i.type                            AS type,
       i.name                            AS name,
       i.index_key                       AS index_key,
       i.deposed                         AS deposed,
       i.provider                        AS provider,
       i.status                          AS status,
       p.body -> '$.attributes'           AS attributes,
       p.body -> '$.sensitive_attributes' AS sensitive_attributes,
       p.body -> '$.dependencies'         AS dependencies
FROM instance_intervals AS i
JOIN states AS s ON s.id = i.state_id
JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
WHERE i.valid_to IS NULL;

-- One row per element of the "dependencies" of a current object (once per
-- address: a deposed object shares its address with the current one).
CREATE VIEW resource_dependencies AS
SELECT DISTINCT
       s.name    AS state,
       i.address AS address,
       d.value   AS depends_on
FROM instance_intervals AS i
JOIN states AS s ON s.id = i.state_id
JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
JOIN json_each(p.body, '$.dependencies') AS d
WHERE i.valid_to IS NULL;

-- Current root module outputs.
CREATE VIEW outputs AS
SELECT s.name               AS state,
       o.name               AS name,
       p.body -> '$.value'  AS value,
       p.body -> '$.type'   AS type,
       o.sensitive          AS sensitive
FROM output_intervals AS o
JOIN states AS s ON s.id = o.state_id
JOIN payloads AS p ON p.state_id = o.state_id AND p.hash = o.hash
WHERE o.valid_to IS NULL;

-- Every interval of every instance object: which versions held which body.
CREATE VIEW resource_history AS
SELECT s.name            AS state,
       i.address         AS address,
       i.instance_id     AS instance_id,
       i.type            AS type,
       i.valid_from      AS valid_from,
       i.valid_to        AS valid_to,
       lower(hex(i.hash)) AS hash
FROM instance_intervals AS i
JOIN states AS s ON s.id = i.state_id;

CREATE VIEW version_history AS
SELECT s.name           AS state,
       v.number         AS number,
       v.serial         AS serial,
       v.source         AS source,
       v.actor          AS actor,
       v.lock_id        AS lock_id,
       v.base_serial    AS base_serial,
       v.created_at     AS created_at,
       v.added          AS added,
       v.changed        AS changed,
       v.removed        AS removed,
       v.instance_count AS instance_count
FROM state_versions AS v
JOIN states AS s ON s.id = v.state_id;

-- KiloLock schema, version 6: the views have the PostgreSQL store's
-- raw_json column: there, the object's JSON text where jsonb cannot hold
-- it (a \u0000 in a string, a lone surrogate, a number beyond numeric's
-- range). SQLite's JSON holds every object the store keeps, so it is NULL
-- here unless the stored text is not JSON SQLite reads.

DROP VIEW resources;
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
       CASE WHEN json_valid(p.body) THEN p.body -> '$.attributes' END           AS attributes,
       CASE WHEN json_valid(p.body) THEN p.body -> '$.sensitive_attributes' END AS sensitive_attributes,
       CASE WHEN json_valid(p.body) THEN p.body -> '$.dependencies' END         AS dependencies,
       CASE WHEN NOT json_valid(p.body) THEN p.body END                        AS raw_json
FROM instance_intervals AS i
JOIN states AS s ON s.id = i.state_id
JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
WHERE i.valid_to IS NULL;

DROP VIEW outputs;
CREATE VIEW outputs AS
SELECT s.name               AS state,
       o.name               AS name,
       CASE WHEN json_valid(p.body) THEN p.body -> '$.value' END AS value,
       CASE WHEN json_valid(p.body) THEN p.body -> '$.type' END  AS type,
       o.sensitive          AS sensitive,
       CASE WHEN NOT json_valid(p.body) THEN p.body END          AS raw_json
FROM output_intervals AS o
JOIN states AS s ON s.id = o.state_id
JOIN payloads AS p ON p.state_id = o.state_id AND p.hash = o.hash
WHERE o.valid_to IS NULL;

-- KiloLock schema, version 19: the view duplicate_objects (the PostgreSQL
-- store's migration 21), what kl search --duplicates lists, for SQL: one
-- row per state and address recording a real object that more than one
-- state records. The same object is the same type and, in order of
-- preference, the same identity object (as the CLI wrote it), arn,
-- self_link, else id; data sources and deposed objects do not count, nor
-- an empty or masked value. states is how many states record it.
--
-- It reads what the other views read (values Terraform marks sensitive
-- are masked there only when the store seals them; kl search masks them
-- always). It counts across every state, so it is the operator's: a
-- tenant's scope would keep the rows of its own states but not hide that
-- another tenant records the same object, and so it is not one of the
-- views a tenant's SQL reads.
-- IF NOT EXISTS: a test that replays an older migration replays this one
-- too. Written without WITH: SQLite's authorizer names the view of a read in a
-- view's subquery, which lets the query role read through it, but not in
-- its common table expressions.
CREATE VIEW IF NOT EXISTS duplicate_objects AS
SELECT k.type AS type, k.key AS key, k.value AS value, k.state AS state, k.address AS address, t.states AS states
FROM (
    SELECT s.name    AS state,
           i.address AS address,
           i.type    AS type,
           CASE WHEN json_type(p.body, '$.identity') = 'object' AND p.body -> '$.identity' <> '{}' THEN 'identity'
                WHEN json_type(p.body, '$.attributes.arn') = 'text' AND p.body ->> '$.attributes.arn' NOT IN ('', '(sensitive)') THEN 'arn'
                WHEN json_type(p.body, '$.attributes.self_link') = 'text' AND p.body ->> '$.attributes.self_link' NOT IN ('', '(sensitive)') THEN 'self_link'
                WHEN json_type(p.body, '$.attributes.id') = 'text' AND p.body ->> '$.attributes.id' NOT IN ('', '(sensitive)') THEN 'id'
           END AS key,
           CASE WHEN json_type(p.body, '$.identity') = 'object' AND p.body -> '$.identity' <> '{}' THEN p.body -> '$.identity'
                WHEN json_type(p.body, '$.attributes.arn') = 'text' AND p.body ->> '$.attributes.arn' NOT IN ('', '(sensitive)') THEN p.body ->> '$.attributes.arn'
                WHEN json_type(p.body, '$.attributes.self_link') = 'text' AND p.body ->> '$.attributes.self_link' NOT IN ('', '(sensitive)') THEN p.body ->> '$.attributes.self_link'
                WHEN json_type(p.body, '$.attributes.id') = 'text' AND p.body ->> '$.attributes.id' NOT IN ('', '(sensitive)') THEN p.body ->> '$.attributes.id'
           END AS value
    FROM instance_intervals AS i
    JOIN states AS s ON s.id = i.state_id
    JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
    WHERE i.valid_to IS NULL AND i.mode = 'managed' AND i.deposed = '' AND json_valid(p.body)
) AS k
JOIN (
    SELECT type, key, value, count(DISTINCT state) AS states
    FROM (
    SELECT s.name    AS state,
           i.address AS address,
           i.type    AS type,
           CASE WHEN json_type(p.body, '$.identity') = 'object' AND p.body -> '$.identity' <> '{}' THEN 'identity'
                WHEN json_type(p.body, '$.attributes.arn') = 'text' AND p.body ->> '$.attributes.arn' NOT IN ('', '(sensitive)') THEN 'arn'
                WHEN json_type(p.body, '$.attributes.self_link') = 'text' AND p.body ->> '$.attributes.self_link' NOT IN ('', '(sensitive)') THEN 'self_link'
                WHEN json_type(p.body, '$.attributes.id') = 'text' AND p.body ->> '$.attributes.id' NOT IN ('', '(sensitive)') THEN 'id'
           END AS key,
           CASE WHEN json_type(p.body, '$.identity') = 'object' AND p.body -> '$.identity' <> '{}' THEN p.body -> '$.identity'
                WHEN json_type(p.body, '$.attributes.arn') = 'text' AND p.body ->> '$.attributes.arn' NOT IN ('', '(sensitive)') THEN p.body ->> '$.attributes.arn'
                WHEN json_type(p.body, '$.attributes.self_link') = 'text' AND p.body ->> '$.attributes.self_link' NOT IN ('', '(sensitive)') THEN p.body ->> '$.attributes.self_link'
                WHEN json_type(p.body, '$.attributes.id') = 'text' AND p.body ->> '$.attributes.id' NOT IN ('', '(sensitive)') THEN p.body ->> '$.attributes.id'
           END AS value
    FROM instance_intervals AS i
    JOIN states AS s ON s.id = i.state_id
    JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash
    WHERE i.valid_to IS NULL AND i.mode = 'managed' AND i.deposed = '' AND json_valid(p.body)
    )
    WHERE key IS NOT NULL
    GROUP BY type, key, value
    HAVING count(DISTINCT state) > 1
) AS t ON t.type = k.type AND t.key = k.key AND t.value = k.value;

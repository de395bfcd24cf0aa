-- KiloLock schema, version 21: the view duplicate_objects (the SQLite
-- store's migration 19), what kl search --duplicates lists, for SQL: one
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
CREATE OR REPLACE VIEW duplicate_objects AS
WITH keyed AS (
    SELECT s.name AS state, i.address, i.type, k.key, k.value
    FROM instance_intervals i
    JOIN states s ON s.id = i.state_id
    JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
    CROSS JOIN LATERAL (SELECT CASE WHEN p.jsonb_ok THEN p.body::jsonb END AS body) o
    CROSS JOIN LATERAL (
        SELECT CASE WHEN jsonb_typeof(o.body -> 'identity') = 'object' AND o.body -> 'identity' <> '{}'::jsonb THEN 'identity'
                    WHEN jsonb_typeof(o.body -> 'attributes' -> 'arn') = 'string' AND o.body -> 'attributes' ->> 'arn' NOT IN ('', '(sensitive)') THEN 'arn'
                    WHEN jsonb_typeof(o.body -> 'attributes' -> 'self_link') = 'string' AND o.body -> 'attributes' ->> 'self_link' NOT IN ('', '(sensitive)') THEN 'self_link'
                    WHEN jsonb_typeof(o.body -> 'attributes' -> 'id') = 'string' AND o.body -> 'attributes' ->> 'id' NOT IN ('', '(sensitive)') THEN 'id'
               END AS key,
               CASE WHEN jsonb_typeof(o.body -> 'identity') = 'object' AND o.body -> 'identity' <> '{}'::jsonb THEN (o.body -> 'identity')::text
                    WHEN jsonb_typeof(o.body -> 'attributes' -> 'arn') = 'string' AND o.body -> 'attributes' ->> 'arn' NOT IN ('', '(sensitive)') THEN o.body -> 'attributes' ->> 'arn'
                    WHEN jsonb_typeof(o.body -> 'attributes' -> 'self_link') = 'string' AND o.body -> 'attributes' ->> 'self_link' NOT IN ('', '(sensitive)') THEN o.body -> 'attributes' ->> 'self_link'
                    WHEN jsonb_typeof(o.body -> 'attributes' -> 'id') = 'string' AND o.body -> 'attributes' ->> 'id' NOT IN ('', '(sensitive)') THEN o.body -> 'attributes' ->> 'id'
               END AS value
    ) k
    WHERE i.valid_to IS NULL AND i.mode = 'managed' AND i.deposed = '' AND k.key IS NOT NULL
),
twice AS (
    SELECT type, key, value, count(DISTINCT state) AS states
    FROM keyed
    GROUP BY type, key, value
    HAVING count(DISTINCT state) > 1
)
SELECT k.type, k.key, k.value, k.state, k.address, t.states
FROM keyed k
JOIN twice t ON t.type = k.type AND t.key = k.key AND t.value = k.value;

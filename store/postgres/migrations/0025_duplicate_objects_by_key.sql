-- KiloLock schema, version 25: the view duplicate_objects (schema 21) reads
-- the identity keys each commit records (schema 22) instead of working
-- each object's out of its JSON again (the SQLite store's migration 23):
-- the keys more than one state holds are grouped through
-- instance_intervals_identity, and only their objects are read, as kl
-- search --duplicates reads them. The keys come from the masked object,
-- so a sensitive value is no key here either; the value shown is the
-- key's, from the object the view reads (masked where the store seals
-- it), the same columns as before.
CREATE OR REPLACE VIEW duplicate_objects AS
SELECT i.type, i.ident_key AS key,
       CASE i.ident_key WHEN 'identity' THEN (o.body -> 'identity')::text ELSE o.body -> 'attributes' ->> i.ident_key END AS value,
       s.name AS state, i.address, g.states
FROM (
    SELECT ident_hash, count(DISTINCT state_id) AS states
    FROM instance_intervals
    WHERE valid_to IS NULL AND ident_key <> ''
    GROUP BY ident_hash
    HAVING count(DISTINCT state_id) > 1
) g
JOIN instance_intervals i ON i.ident_hash = g.ident_hash AND i.valid_to IS NULL AND i.ident_key <> ''
JOIN states s ON s.id = i.state_id
JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
CROSS JOIN LATERAL (SELECT CASE WHEN p.jsonb_ok THEN p.body::jsonb END AS body) o;

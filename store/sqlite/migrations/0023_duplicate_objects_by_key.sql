-- KiloLock schema, version 23: the view duplicate_objects (schema 19) reads
-- the identity keys each commit records (schema 20) instead of working
-- each object's out of its JSON again (the PostgreSQL store's migration
-- 25): the keys more than one state holds are grouped through
-- instance_intervals_identity, and only their objects are read, as kl
-- search --duplicates reads them. The keys come from the masked object,
-- so a sensitive value is no key here either; the value shown is the
-- key's, from the object the view reads (masked where the store seals
-- it), the same columns as before.
--
-- DROP first: SQLite has no CREATE OR REPLACE VIEW. Written without WITH,
-- as schema 19's (the authorizer names the view of a read in a subquery).
DROP VIEW IF EXISTS duplicate_objects;
CREATE VIEW duplicate_objects AS
SELECT i.type AS type, i.ident_key AS key,
       CASE i.ident_key WHEN 'identity' THEN p.body -> '$.identity' ELSE p.body ->> ('$.attributes.' || i.ident_key) END AS value,
       s.name AS state, i.address AS address, g.states AS states
FROM (
    SELECT ident_hash, count(DISTINCT state_id) AS states
    FROM instance_intervals
    WHERE valid_to IS NULL AND ident_key <> ''
    GROUP BY ident_hash
    HAVING count(DISTINCT state_id) > 1
) AS g
JOIN instance_intervals AS i ON i.ident_hash = g.ident_hash AND i.valid_to IS NULL AND i.ident_key <> ''
JOIN states AS s ON s.id = i.state_id
JOIN payloads AS p ON p.state_id = i.state_id AND p.hash = i.hash;

-- KiloLock schema, version 13: interval bounds read as kept versions. The
-- PostgreSQL store has the same view (its migration 14).
--
-- Retention no longer moves the bounds of the intervals a pruned version
-- left open (that rewrote every instance the oldest version created, on
-- each pruning): a bound reads as the first version kept at or after it.
-- Whether a version holds an interval reads the same either way;
-- resource_history shows the versions the bounds stand for.
DROP VIEW resource_history;
CREATE VIEW resource_history AS
SELECT s.name            AS state,
       i.address         AS address,
       i.instance_id     AS instance_id,
       i.type            AS type,
       (SELECT min(w.number) FROM state_versions AS w
         WHERE w.state_id = i.state_id AND w.number >= i.valid_from) AS valid_from,
       (SELECT min(w.number) FROM state_versions AS w
         WHERE w.state_id = i.state_id AND w.number >= i.valid_to)   AS valid_to,
       lower(hex(i.hash)) AS hash
FROM instance_intervals AS i
JOIN states AS s ON s.id = i.state_id;

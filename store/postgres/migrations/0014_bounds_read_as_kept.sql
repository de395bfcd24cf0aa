-- KiloLock schema, version 14: interval bounds read as kept versions. The
-- SQLite store has the same view (its migration 13).
--
-- Retention no longer moves the bounds of the intervals a pruned version
-- left open (that rewrote every instance the oldest version created, on
-- each pruning): a bound reads as the first version kept at or after it.
-- Whether a version holds an interval reads the same either way;
-- resource_history shows the versions the bounds stand for. The columns
-- keep their names and types, so the views over it stand.
CREATE OR REPLACE VIEW resource_history AS
SELECT s.name AS state,
       i.address,
       i.instance_id,
       i.type,
       (SELECT min(w.number) FROM state_versions w
         WHERE w.state_id = i.state_id AND w.number >= i.valid_from) AS valid_from,
       (SELECT min(w.number) FROM state_versions w
         WHERE w.state_id = i.state_id AND w.number >= i.valid_to) AS valid_to,
       encode(i.hash, 'hex') AS hash
FROM instance_intervals i
JOIN states s ON s.id = i.state_id;

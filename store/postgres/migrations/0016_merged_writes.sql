-- KiloLock schema, version 16: a merged write keeps its writer's source.
-- The SQLite store has the same column and view (its migration 14).
--
-- A write merged onto versions committed after the serial its writer read
-- recorded the source 'merge', so an apply that shared its state with
-- another was not an apply in the history. It now records the writer's
-- source (apply) and merged = true. Versions merged before keep their
-- source 'merge' and are marked merged too.
ALTER TABLE state_versions ADD COLUMN merged BOOLEAN NOT NULL DEFAULT false;
UPDATE state_versions SET merged = true WHERE source = 'merge';

CREATE OR REPLACE VIEW version_history AS
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
       v.instance_count,
       v.merged
FROM state_versions v
JOIN states s ON s.id = v.state_id;

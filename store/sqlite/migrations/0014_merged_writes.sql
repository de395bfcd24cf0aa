-- KiloLock schema, version 14: a merged write keeps its writer's source.
-- The PostgreSQL store has the same column and view (its migration 16).
--
-- A write merged onto versions committed after the serial its writer read
-- recorded the source 'merge', so an apply that shared its state with
-- another was not an apply in the history. It now records the writer's
-- source (apply) and merged = true. Versions merged before keep their
-- source 'merge' and are marked merged too.
ALTER TABLE state_versions ADD COLUMN merged BOOLEAN NOT NULL DEFAULT false;
UPDATE state_versions SET merged = true WHERE source = 'merge';

DROP VIEW version_history;
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
       v.instance_count AS instance_count,
       v.merged         AS merged
FROM state_versions AS v
JOIN states AS s ON s.id = v.state_id;

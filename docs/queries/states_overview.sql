-- States overview: each state's current version, serial, instance and
-- output counts, and its last write (what made it, who, when).
SELECT v.state,
       v.number         AS version,
       v.serial,
       v.instance_count AS instances,
       (SELECT COUNT(*) FROM outputs o WHERE o.state = v.state) AS outputs,
       v.source         AS last_source,
       v.actor          AS last_actor,
       v.created_at     AS last_write
FROM version_history v
WHERE v.number = (SELECT MAX(h.number) FROM version_history h WHERE h.state = v.state)
ORDER BY v.state;

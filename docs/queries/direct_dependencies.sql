-- Direct dependencies and dependents of one resource: each row is a
-- dependency (what its instances record a dependency on) or a dependent
-- (an instance that records a dependency on it).
--
-- Edit the state and the resource address in target. The CLIs record
-- dependencies by resource address with no index keys, so name a resource
-- (aws_instance.web), not an instance; inside a module called with count or
-- for_each, write the module path without its keys (module.app, not
-- module.app[0]).
WITH target AS (
    SELECT 'prod' AS state, 'aws_instance.web' AS resource
)
SELECT 'dependency' AS relation,
       d.depends_on  AS address
FROM resource_dependencies d
JOIN resources r ON r.state = d.state AND r.address = d.address
JOIN target t ON t.state = r.state
WHERE CASE WHEN r.module = '' THEN '' ELSE r.module || '.' END
   || CASE WHEN r.mode = 'data' THEN 'data.' ELSE '' END
   || r.type || '.' || r.name = t.resource
UNION
SELECT 'dependent' AS relation,
       d.address
FROM resource_dependencies d
JOIN target t ON t.state = d.state AND d.depends_on = t.resource
ORDER BY relation, address;

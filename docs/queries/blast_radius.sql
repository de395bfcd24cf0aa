-- Blast radius: every instance that depends on one resource, directly or
-- through others, with how many dependency edges away it is: what a change
-- to that resource may touch. (kl graph NAME --address ADDR answers the
-- same from the server, at any version.)
--
-- Edit the state and the resource address in target (a resource address
-- with no index keys, as in direct_dependencies.sql).
WITH RECURSIVE target AS (
    SELECT 'prod' AS state, 'aws_s3_bucket.assets' AS resource
),
radius (address, depth) AS (
    SELECT d.address, 1
    FROM resource_dependencies d
    JOIN target t ON t.state = d.state AND d.depends_on = t.resource
    UNION
    SELECT d.address, x.depth + 1
    FROM radius x
    JOIN target t ON true
    JOIN resources r ON r.state = t.state AND r.address = x.address
    JOIN resource_dependencies d ON d.state = r.state
     AND d.depends_on = CASE WHEN r.module = '' THEN '' ELSE r.module || '.' END
                     || CASE WHEN r.mode = 'data' THEN 'data.' ELSE '' END
                     || r.type || '.' || r.name
    WHERE x.depth < 100
)
SELECT address,
       MIN(depth) AS depth
FROM radius
GROUP BY address
ORDER BY depth, address;

-- Inventory by type: how many managed instances of each resource type the
-- current versions of all states hold, and in how many states. Data
-- sources are left out; deposed objects count as the instances they are.
SELECT type,
       COUNT(*)              AS instances,
       COUNT(DISTINCT state) AS states
FROM resources
WHERE mode = 'managed'
GROUP BY type
ORDER BY instances DESC, type;

-- Orphaned data sources: data sources that no instance of their state
-- records a dependency on. They are read by outputs or locals only, or by
-- nothing at all: candidates to remove from the configuration (check its
-- outputs and locals first; those leave no trace in the state).
SELECT r.state,
       r.address
FROM resources r
WHERE r.mode = 'data'
  AND NOT EXISTS (
      SELECT 1
      FROM resource_dependencies d
      WHERE d.state = r.state
        AND d.depends_on = CASE WHEN r.module = '' THEN '' ELSE r.module || '.' END
                        || 'data.' || r.type || '.' || r.name
  )
ORDER BY r.state, r.address;

-- Current drift: each instance that the latest drift check of it (kl drift
-- check) found different from the real infrastructure, and that no version
-- has changed since: gone, or changed (the paths, with the recorded and
-- real values, are in resource_drift.changes). With the version checked,
-- when and by whom. Accept a refresh (kl drift check --accept) or apply the
-- configuration to close a record; a check that finds it clean closes it too.
SELECT d.state,
       d.address,
       d.kind,
       d.version,
       d.checked_by,
       d.checked_at
FROM resource_drift d
ORDER BY d.state, d.address;

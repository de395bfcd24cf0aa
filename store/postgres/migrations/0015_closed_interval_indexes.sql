-- KiloLock schema, version 15: the (state_id, valid_to) indexes hold the
-- closed intervals only. Every query that reads them bounds valid_to
-- (ChangesSince, retention), which a NULL never meets; a current interval
-- is found through the partial unique index *_current. With current
-- intervals in them too, the planner could take (state_id, valid_to IS
-- NULL) for a commit's probe of a few instance IDs — statistics that say
-- nothing yet (right after a first big write) make the two indexes cost
-- the same — and walk every current interval of the state for each key.
-- Upgrading rebuilds the two indexes: writes to the intervals wait for as
-- long as that takes (kld replicas starting together wait on the
-- migration lock).
DROP INDEX instance_intervals_valid_to;
CREATE INDEX instance_intervals_valid_to ON instance_intervals (state_id, valid_to) WHERE valid_to IS NOT NULL;
DROP INDEX output_intervals_valid_to;
CREATE INDEX output_intervals_valid_to ON output_intervals (state_id, valid_to) WHERE valid_to IS NOT NULL;

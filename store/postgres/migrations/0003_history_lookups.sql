-- KiloLock schema, version 3: version references by Terraform serial
-- (`serial:S`) are one index lookup, and the history of one address is a
-- range scan of instance IDs in byte order whatever the database collation.
CREATE INDEX state_versions_serial ON state_versions (state_id, serial, number);
CREATE INDEX instance_intervals_id_bytes ON instance_intervals (state_id, (instance_id COLLATE "C"), valid_from);

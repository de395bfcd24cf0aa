-- KiloLock schema, version 3: version references by Terraform serial
-- (`serial:S`) are one index lookup.
CREATE INDEX state_versions_serial ON state_versions (state_id, serial, number);

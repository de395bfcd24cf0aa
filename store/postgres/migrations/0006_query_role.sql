-- KiloLock schema, version 6: users' SQL runs as a role of its own, which
-- may read only the views (see Query).
--
-- kl_settings keeps the query role's name and password (see Query); only
-- the store's role may read it.
CREATE TABLE kl_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
REVOKE ALL ON kl_settings FROM PUBLIC;

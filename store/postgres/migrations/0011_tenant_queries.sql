-- KiloLock schema, version 11: tenants' SQL (kl query with a token).
--
-- A tenant's statement runs as a login role of its own on views of a
-- schema of their own (see store/postgres/tenantquery.go), each showing the
-- rows of the states whose names start with a prefix kld wrote here, on
-- its own connection, for the query's backend (pid) and a random nonce
-- set in the query's transaction. Only the store's role reads or writes
-- this table; a row outlives its query only if kld died meanwhile, and
-- then no longer counts after expires_at.
CREATE TABLE kl_query_scopes (
    pid        INT         NOT NULL,
    nonce      TEXT        NOT NULL,
    prefix     TEXT        NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX kl_query_scopes_pid ON kl_query_scopes (pid, nonce);
CREATE INDEX kl_query_scopes_expires ON kl_query_scopes (expires_at);
REVOKE ALL ON kl_query_scopes FROM PUBLIC;

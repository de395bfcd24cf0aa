-- KiloLock schema, version 16: trust policies of workload identity. The
-- PostgreSQL store has the same relation (its migration 18).
--
-- A trust policy says which OIDC ID tokens (CI jobs' own) reach an
-- environment, with what scope: those of issuer, for audience, whose
-- claims equal claims and match claim_globs (JSON objects of strings),
-- living at most max_ttl_ms. It goes with its environment.
CREATE TABLE trust_policies (
    id             TEXT    PRIMARY KEY,
    environment_id TEXT    NOT NULL REFERENCES environments (public_id) ON DELETE CASCADE,
    issuer         TEXT    NOT NULL,
    audience       TEXT    NOT NULL,
    claims         TEXT    NOT NULL,
    claim_globs    TEXT    NOT NULL,
    scope          TEXT    NOT NULL CHECK (scope IN ('read', 'read-write', 'outputs')),
    state_pattern  TEXT    NOT NULL,
    max_ttl_ms     INTEGER NOT NULL CHECK (max_ttl_ms > 0),
    created_at     TEXT    NOT NULL
);
CREATE INDEX trust_policies_environment ON trust_policies (environment_id, id);

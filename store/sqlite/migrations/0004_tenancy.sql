-- KiloLock schema, version 4: the authenticated multi-tenant lane.
-- Workspaces hold environments; tokens are kept only as SHA-256 hashes
-- (hex) of their secrets. The PostgreSQL store has the same relation names.

CREATE TABLE workspaces (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('personal', 'organization')),
    lifecycle  TEXT NOT NULL CHECK (lifecycle IN ('active', 'suspended')),
    created_at TEXT NOT NULL
);

CREATE TABLE environments (
    public_id    TEXT PRIMARY KEY,
    slug         TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    created_at   TEXT NOT NULL,
    UNIQUE (workspace_id, slug)
);

CREATE TABLE workspace_members (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    PRIMARY KEY (workspace_id, user_id)
);

CREATE TABLE tokens (
    id             TEXT PRIMARY KEY,
    kind           TEXT NOT NULL CHECK (kind IN ('automation', 'personal', 'operator')),
    name           TEXT NOT NULL,
    secret_hash    TEXT NOT NULL UNIQUE,
    environment_id TEXT REFERENCES environments (public_id) ON DELETE CASCADE,
    scope          TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    last_used_at   TEXT
);

CREATE TABLE token_grants (
    token_id       TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    environment_id TEXT NOT NULL REFERENCES environments (public_id) ON DELETE CASCADE,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (token_id, environment_id)
);

CREATE TABLE state_holds (
    name      TEXT PRIMARY KEY,
    lifecycle TEXT NOT NULL CHECK (lifecycle IN ('active', 'archived'))
);

CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    remote     TEXT    NOT NULL,
    denied     BOOLEAN NOT NULL,
    reason     TEXT    NOT NULL,
    request_id TEXT    NOT NULL
);
CREATE INDEX audit_log_denied ON audit_log (denied, id);

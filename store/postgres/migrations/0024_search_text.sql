-- KiloLock schema, version 24: the text index of the current objects, for
-- a search by text (kl search --text; the SQLite store's migration 22). A
-- commit records, on each interval it opens, search_text: the object's
-- attribute keys and scalar values, lowercased, one a line, from the
-- masked object (inventory.SearchText: no sensitive value is ever in it).
-- Closing an interval clears it: only current objects are searched. NULL
-- on a current interval is not worked out yet: those current when this
-- migration ran, and those of a backup of an older release, which the
-- store fills in when it opens (and after a restore), through
-- instance_intervals_text_pending.
--
-- instance_intervals_text indexes the trigrams of the current intervals'
-- texts (pg_trgm), so that search_text LIKE '%text%' finds the few that
-- hold a text of three characters or more without reading the others.
-- pg_trgm ships with PostgreSQL (its contrib modules) and is trusted: the
-- database's owner may create it. Where it cannot be, the upgrade stops
-- here, before changing anything, and says what to do.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    -- The message says what to do: a driver's error shows no HINT.
    RAISE EXCEPTION 'KiloLock schema 24 needs the PostgreSQL extension pg_trgm (the text index of kl search --text), which this database cannot create (%): install PostgreSQL''s contrib modules on the database server (Debian, Ubuntu, RPM: postgresql-contrib), or have a superuser run CREATE EXTENSION pg_trgm in this database, then start kld again', SQLERRM;
END
$$;
ALTER TABLE instance_intervals ADD COLUMN search_text TEXT;
CREATE INDEX instance_intervals_text ON instance_intervals USING gin (search_text gin_trgm_ops) WHERE valid_to IS NULL;
CREATE INDEX instance_intervals_text_pending ON instance_intervals (state_id) WHERE valid_to IS NULL AND search_text IS NULL;

-- KiloLock schema, version 22: the text index of the current objects, for
-- a search by text (kl search --text; the PostgreSQL store's migration
-- 24). A commit records, on each interval it opens, search_text: the
-- object's attribute keys and scalar values, lowercased, one a line, from
-- the masked object (inventory.SearchText: no sensitive value is ever in
-- it). Closing an interval clears it: only current objects are searched.
-- NULL on a current interval is not worked out yet: those current when
-- this migration ran, and those of a backup of an older release, which
-- the store fills in when it opens (and after a restore), through
-- instance_intervals_text_pending.
--
-- instance_text is an FTS5 index of trigrams that stores no text of its
-- own (contentless) nor where in it a trigram is (detail=none: a first
-- write of 10,000 objects takes a third less time): a text of three
-- characters or more is looked for as all of its trigrams (kl_trigrams),
-- which the caller's exact check confirms. Its rowid is that of
-- instance_text_rows, which names the
-- interval: an interval's own rowid is no key to keep (VACUUM may
-- renumber it). The triggers keep both to the current intervals' texts,
-- whatever writes them: a commit, the fill, a restore, a state's delete.
ALTER TABLE instance_intervals ADD COLUMN search_text TEXT;
CREATE INDEX instance_intervals_text_pending ON instance_intervals (state_id) WHERE valid_to IS NULL AND search_text IS NULL;
CREATE TABLE instance_text_rows (
    id          INTEGER PRIMARY KEY,
    state_id    INTEGER NOT NULL,
    instance_id TEXT    NOT NULL
);
CREATE UNIQUE INDEX instance_text_rows_interval ON instance_text_rows (state_id, instance_id);
CREATE VIRTUAL TABLE instance_text USING fts5(text, content = '', contentless_delete = 1, tokenize = 'trigram', detail = 'none');
CREATE TRIGGER instance_text_open AFTER INSERT ON instance_intervals
    WHEN new.valid_to IS NULL AND new.search_text IS NOT NULL
BEGIN
    INSERT INTO instance_text_rows (state_id, instance_id) VALUES (new.state_id, new.instance_id);
    INSERT INTO instance_text (rowid, text) VALUES (last_insert_rowid(), new.search_text);
END;
-- One trigger for an update, whose old row leaves the index before its
-- new one enters: a commit's close, the fill, a rewrite.
CREATE TRIGGER instance_text_update AFTER UPDATE OF valid_to, search_text ON instance_intervals
    WHEN old.valid_to IS NULL AND old.search_text IS NOT NULL OR new.valid_to IS NULL AND new.search_text IS NOT NULL
BEGIN
    DELETE FROM instance_text WHERE old.valid_to IS NULL AND old.search_text IS NOT NULL
        AND rowid = (SELECT id FROM instance_text_rows WHERE state_id = old.state_id AND instance_id = old.instance_id);
    DELETE FROM instance_text_rows WHERE old.valid_to IS NULL AND old.search_text IS NOT NULL
        AND state_id = old.state_id AND instance_id = old.instance_id;
    INSERT INTO instance_text_rows (state_id, instance_id) SELECT new.state_id, new.instance_id
        WHERE new.valid_to IS NULL AND new.search_text IS NOT NULL;
    INSERT INTO instance_text (rowid, text) SELECT last_insert_rowid(), new.search_text
        WHERE new.valid_to IS NULL AND new.search_text IS NOT NULL;
END;
CREATE TRIGGER instance_text_delete AFTER DELETE ON instance_intervals
    WHEN old.valid_to IS NULL AND old.search_text IS NOT NULL
BEGIN
    DELETE FROM instance_text WHERE rowid = (SELECT id FROM instance_text_rows WHERE state_id = old.state_id AND instance_id = old.instance_id);
    DELETE FROM instance_text_rows WHERE state_id = old.state_id AND instance_id = old.instance_id;
END;

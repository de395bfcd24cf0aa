-- KiloLock schema, version 24: the text index (schema 22) is written
-- apart from the writes that change it. FTS5 writes what it holds to disk,
-- as a segment of its own, at each savepoint, and merges the segments as
-- they add up: with triggers writing it a row at a time, a first write of
-- 10,000 objects wrote a segment per row, and a write of 2 changes paid
-- for four segments and their merges.
--
-- The triggers now only keep instance_text_rows, a plain table: a row is
-- pending (1) until its text is in instance_text, and an indexed row that
-- leaves (its interval closed or deleted) names its id in
-- instance_text_gone. The SQLite store's text indexer moves both into
-- instance_text, a batch of rows in one statement, in transactions of its
-- own after the writes commit (store/sqlite/textindex.go). A search reads
-- instance_text through instance_text_rows, so a row that left is not
-- found even before its id leaves instance_text, and takes each pending
-- row as a candidate, which the exact check confirms or drops.
DROP TRIGGER instance_text_open;
DROP TRIGGER instance_text_update;
DROP TRIGGER instance_text_delete;
ALTER TABLE instance_text_rows ADD COLUMN pending INTEGER;
CREATE INDEX instance_text_rows_pending ON instance_text_rows (id) WHERE pending IS NOT NULL;
CREATE TABLE instance_text_gone (id INTEGER PRIMARY KEY);
CREATE TRIGGER instance_text_open AFTER INSERT ON instance_intervals
    WHEN new.valid_to IS NULL AND new.search_text IS NOT NULL
BEGIN
    INSERT INTO instance_text_rows (state_id, instance_id, pending) VALUES (new.state_id, new.instance_id, 1);
END;
-- A row's id may be taken again in the same transaction (the largest
-- one's, once gone): the index drops the gone ids before it takes the
-- pending ones.
CREATE TRIGGER instance_text_update AFTER UPDATE OF valid_to, search_text ON instance_intervals
    WHEN old.valid_to IS NULL AND old.search_text IS NOT NULL OR new.valid_to IS NULL AND new.search_text IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO instance_text_gone (id) SELECT id FROM instance_text_rows
        WHERE old.valid_to IS NULL AND old.search_text IS NOT NULL
        AND state_id = old.state_id AND instance_id = old.instance_id AND pending IS NULL;
    DELETE FROM instance_text_rows WHERE old.valid_to IS NULL AND old.search_text IS NOT NULL
        AND state_id = old.state_id AND instance_id = old.instance_id;
    INSERT INTO instance_text_rows (state_id, instance_id, pending) SELECT new.state_id, new.instance_id, 1
        WHERE new.valid_to IS NULL AND new.search_text IS NOT NULL;
END;
CREATE TRIGGER instance_text_delete AFTER DELETE ON instance_intervals
    WHEN old.valid_to IS NULL AND old.search_text IS NOT NULL
BEGIN
    INSERT OR IGNORE INTO instance_text_gone (id) SELECT id FROM instance_text_rows
        WHERE state_id = old.state_id AND instance_id = old.instance_id AND pending IS NULL;
    DELETE FROM instance_text_rows WHERE state_id = old.state_id AND instance_id = old.instance_id;
END;

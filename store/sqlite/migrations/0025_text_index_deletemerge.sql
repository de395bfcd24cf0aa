-- KiloLock schema, version 25: the text index (schema 22) rewrites a level
-- of its segments for the rows deleted from it once they are 30% of the
-- level's, not 10% (FTS5's deletemerge). Every commit deletes the rows of
-- the objects it replaces, most of them in the oldest, largest segments:
-- at 10% FTS5 rewrote those about once per tenth of the index replaced,
-- the larger part of the text indexer's CPU in steady writes (store/sqlite
-- BenchmarkTextIndexSteady: 1.15-1.31 -> 0.86 ms a commit of 2 objects,
-- the index no larger). A deleted row's entries stay in its segment until
-- that is merged; a search skips them.
INSERT INTO instance_text (instance_text, rank) VALUES ('deletemerge', 30);

-- Recent writes: the 20 newest versions of any state, with who wrote them,
-- under which lock, from what (apply, push, rollback, state-rm, …) and how
-- many instances each added, changed and removed.
SELECT state,
       number AS version,
       serial,
       source,
       actor,
       lock_id,
       added,
       changed,
       removed,
       created_at
FROM version_history
ORDER BY created_at DESC, state, number DESC
LIMIT 20;

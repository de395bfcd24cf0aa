-- KiloLock schema, version 7: the views answer for every stored state.
--
-- kl_jsonb_ok(t) is whether jsonb holds t, valid JSON text, erring on the
-- side of no: not with a \u0000 or a surrogate escape in it (jsonb holds no
-- NUL, nor a lone surrogate), an exponent of five digits or more, or a run
-- of 255 digits after a point in a long text (numeric holds at most 16,383
-- fraction digits), or of 255 digits at all in a huge one. Where it is
-- false the views give NULL jsonb and the text beside it, so that no stored
-- state makes a view fail for everyone. payloads keeps it, computed once
-- per payload as it is written.
CREATE FUNCTION kl_jsonb_ok(t text) RETURNS boolean LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT strpos(t, '\u0000') = 0
       AND (strpos(t, '\u') = 0 OR t !~* '\\ud[89a-f]')
       AND t !~ '[eE][-+]?[0-9]{5}'
       AND (length(t) < 16384 OR t !~ '\.[0-9]{255}')
       AND (length(t) < 131072 OR t !~ '[0-9]{255}')
$$;

ALTER TABLE payloads ADD COLUMN jsonb_ok BOOLEAN GENERATED ALWAYS AS (kl_jsonb_ok(body)) STORED;

-- raw_json is the object's JSON text where jsonb cannot hold it (and the
-- jsonb columns are then NULL); NULL otherwise.
CREATE OR REPLACE VIEW resources AS
SELECT s.name AS state,
       i.address,
       i.instance_id,
       i.module,
       i.mode,
       i.type,
       i.name,
       i.index_key,
       i.deposed,
       i.provider,
       i.status,
       o.body -> 'attributes' AS attributes,
       o.body -> 'sensitive_attributes' AS sensitive_attributes,
       o.body -> 'dependencies' AS dependencies,
       CASE WHEN NOT p.jsonb_ok THEN p.body END AS raw_json
FROM instance_intervals i
JOIN states s ON s.id = i.state_id
JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
CROSS JOIN LATERAL (SELECT CASE WHEN p.jsonb_ok THEN p.body::jsonb END AS body) o
WHERE i.valid_to IS NULL;

CREATE OR REPLACE VIEW outputs AS
SELECT s.name AS state,
       oi.name,
       o.body -> 'value' AS value,
       o.body -> 'type' AS type,
       oi.sensitive,
       CASE WHEN NOT p.jsonb_ok THEN p.body END AS raw_json
FROM output_intervals oi
JOIN states s ON s.id = oi.state_id
JOIN payloads p ON p.state_id = oi.state_id AND p.hash = oi.hash
CROSS JOIN LATERAL (SELECT CASE WHEN p.jsonb_ok THEN p.body::jsonb END AS body) o
WHERE oi.valid_to IS NULL;

CREATE OR REPLACE VIEW rejected_commit_history AS
SELECT s.name AS state,
       r.created_at,
       r.lock_id,
       r.actor,
       r.reason,
       CASE WHEN kl_jsonb_ok(r.addresses) THEN r.addresses::jsonb END AS addresses,
       r.latest_serial,
       r.base_serial,
       r.winner_actor,
       r.winner_lock_id,
       r.winner_version,
       r.hint
FROM rejected_commits r
JOIN states s ON s.id = r.state_id;

-- An address with a NUL is \u0000 in the JSON of addresses, which jsonb
-- cannot hold: the check must not cast.
ALTER TABLE rejected_commits DROP CONSTRAINT rejected_commits_addresses_check;
ALTER TABLE rejected_commits ADD CONSTRAINT rejected_commits_addresses_check
    CHECK (left(addresses, 1) = '[' AND (NOT kl_jsonb_ok(addresses) OR jsonb_typeof(addresses::jsonb) = 'array'));

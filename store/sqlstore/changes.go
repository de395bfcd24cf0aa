package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// sqlCurrentVersion is the current version number of the state named $1.
const sqlCurrentVersion = `(SELECT current_version FROM states WHERE name = $1)`

// sqlKeptAt is the version of the state whose id is the SQL expression
// state that an interval bound (the SQL expression bound) reads as: the
// first version kept at or after it, one probe of the (state_id, number)
// key. A bound is a version the state has until retention prunes it;
// pruning moves no bound (see pruneVersions), so a bound at a pruned
// number stands for the next version kept. Whether a version v holds an
// interval reads the same either way (valid_from <= v < valid_to).
func sqlKeptAt(state, bound string) string {
	return `(SELECT min(w.number) FROM state_versions w WHERE w.state_id = ` + state + ` AND w.number >= ` + bound + `)`
}

// SQLChangesSince lists the keys versions after $2 changed: a version v
// changed a key iff it opened an interval of it (a valid_from that reads
// as v, see sqlKeptAt) or closed one (a valid_to that does). Each branch
// is a range scan of the (state_id, valid_from) or (state_id, valid_to)
// index, so the cost is that of the rows returned, not of the state or its
// history (the NULL valid_to of the current intervals sort after the
// range, so the scan stops before them); DISTINCT drops the second row of
// a change, which both closes and opens an interval. The ranges start
// after the newest version at or before $2 (bounds past it read as later
// versions, those before it as it or earlier ones).
//
// The upper bound, the current version, selects nothing more; it is there
// for PostgreSQL's planner. A range bounded on both sides by values it does
// not know (a generic plan, which a prepared statement may switch to) is
// estimated at 0.5% of the rows, which keeps index scans; a range bounded
// on one side is estimated at a third, which for a state's versions or
// outputs is a sequential scan of the whole history.
var SQLChangesSince = func() string {
	after := `coalesce((SELECT max(a.number) FROM state_versions a WHERE a.state_id = ` + sqlStateID + ` AND a.number <= $2), 0)`
	within := func(bound string) string { return bound + ` > ` + after + ` AND ` + bound + ` <= ` + sqlCurrentVersion }
	in := func(bound string) string { return `state_id = ` + sqlStateID + ` AND ` + within(bound) }
	return `SELECT c.version, v.lock_id, v.actor, c.output, c.id
	FROM (
		SELECT DISTINCT ` + sqlKeptAt(sqlStateID, "r.bound") + ` AS version, r.output, r.id FROM (
			SELECT valid_from AS bound, false AS output, instance_id AS id FROM instance_intervals WHERE ` + in("valid_from") + `
			UNION
			SELECT valid_to, false, instance_id FROM instance_intervals WHERE ` + in("valid_to") + `
			UNION
			SELECT valid_from, true, name FROM output_intervals WHERE ` + in("valid_from") + `
			UNION
			SELECT valid_to, true, name FROM output_intervals WHERE ` + in("valid_to") + `
		) AS r
	) AS c
	JOIN state_versions AS v ON v.state_id = ` + sqlStateID + ` AND v.number = c.version
		AND ` + within("v.number") + `
	ORDER BY c.version, c.output, c.id{C}`
}()

// ChangesSince lists what every version numbered above after changed: one
// record per instance ID or output name a version added, changed or
// removed, ordered by version, then instances before outputs, then ID (in
// byte order). An empty list when no version is above after. ErrNotFound
// when the state does not exist. One batch in one snapshot: whether the
// state exists, and its changes.
func (s *Store) ChangesSince(ctx context.Context, name string, after int64) ([]kilolock.ChangeRecord, error) {
	out, err := ofState(ctx, s, "changes since", name, func(r Rows, c *kilolock.ChangeRecord) (bool, error) {
		return true, r.Scan(&c.Version, &c.LockID, &c.Actor, &c.Output, &c.ID)
	}, SQLChangesSince, name, after)
	if err == nil && s.resort {
		inOrder(out, func(a, b kilolock.ChangeRecord) int {
			return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(boolInt(a.Output), boolInt(b.Output)), strings.Compare(a.ID, b.ID))
		})
	}
	return out, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SQLInstanceHashesAt and SQLOutputHashesAt are the hashes of keys ($3) at
// version $2. Intervals of one key never overlap, so the key is in the
// version iff the last interval that began at or before it has not ended
// by it. The subquery finds that interval with one probe of the primary
// key (state_id, key, valid_from) per key, whatever the statistics say and
// however often the key changed; its hash is NULL when the key is not in
// the version.
const (
	SQLInstanceHashesAt = `SELECT u.k, (SELECT CASE WHEN i.valid_to IS NULL OR i.valid_to > $2 THEN i.hash END
			FROM instance_intervals i WHERE i.state_id = ` + sqlStateID + ` AND i.instance_id = u.k AND i.valid_from <= $2
			ORDER BY i.valid_from DESC LIMIT 1)
		FROM {texts $3} AS u`
	SQLOutputHashesAt = `SELECT u.k, (SELECT CASE WHEN o.valid_to IS NULL OR o.valid_to > $2 THEN o.hash END
			FROM output_intervals o WHERE o.state_id = ` + sqlStateID + ` AND o.name = u.k AND o.valid_from <= $2
			ORDER BY o.valid_from DESC LIMIT 1)
		FROM {texts $3} AS u`
)

// HashesAt returns the hashes, in version number, of the given instance
// IDs and output names; a key the version does not hold is absent from the
// maps (which are never nil). ErrNotFound when the state or the version
// does not exist. One batch in one snapshot, whatever the number of keys
// (they travel as lists), and one index probe per key.
func (s *Store) HashesAt(ctx context.Context, name string, number int64, instanceIDs, outputNames []string) (instances, outputs map[string]graph.Hash, err error) {
	instances = make(map[string]graph.Hash, len(instanceIDs))
	outputs = make(map[string]graph.Hash, len(outputNames))
	err = s.read(ctx, "hashes at", func(tx Tx) error {
		b := &Batch{}
		var found, exists bool
		b.Query(func(r Rows) error { found = true; return r.Scan(&exists) }, `SELECT EXISTS (SELECT 1 FROM state_versions WHERE state_id = s.id AND number = $2)
			FROM states s WHERE s.name = $1`, name, number)
		if len(instanceIDs) > 0 {
			b.Query(readHash(instances), SQLInstanceHashesAt, name, number, instanceIDs)
		}
		if len(outputNames) > 0 {
			b.Query(readHash(outputs), SQLOutputHashesAt, name, number, outputNames)
		}
		if err := tx.Send(ctx, b); err != nil {
			return err
		}
		switch {
		case !found:
			return notFound(name)
		case !exists:
			return fmt.Errorf("state %q has no version %d: %w", name, number, kilolock.ErrNotFound)
		}
		return s.contentHashes(ctx, tx, name, instances, outputs)
	})
	if err != nil {
		return nil, nil, err
	}
	return instances, outputs, nil
}

// sqlSealedPayloads are the sealed payloads of the state named $1 among
// the addresses $2, with the state's data key.
const sqlSealedPayloads = `SELECT p.hash, p.sealed, k.key_id, k.wrapped FROM {bytes $2} AS u
	JOIN payloads p ON p.state_id = ` + sqlStateID + ` AND p.hash = u.k
	JOIN state_keys k ON k.state_id = p.state_id
	WHERE p.sealed IS NOT NULL`

// contentHashes replaces, in the maps of HashesAt, the addresses of
// sealed payloads (keyed hashes) with their content hashes, read from
// inside them: one more statement, on a store that seals, with a probe
// per key.
func (s *Store) contentHashes(ctx context.Context, tx Tx, name string, maps ...map[string]graph.Hash) error {
	if s.seal == nil {
		return nil
	}
	var addrs [][]byte
	for _, m := range maps {
		for _, h := range m {
			addrs = append(addrs, h[:])
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	content := map[graph.Hash]graph.Hash{}
	rows, err := tx.Query(ctx, sqlSealedPayloads, name, addrs)
	err = EachRow(rows, err, func(r Rows) error {
		var (
			addr, sealed []byte
			rk           rowKey
		)
		if err := r.Scan(&addr, &sealed, &rk.keyID, &rk.wrapped); err != nil {
			return err
		}
		if len(addr) != len(graph.Hash{}) {
			return corrupt("a stored payload's hash is %d bytes: the database is corrupt", len(addr))
		}
		h, _, err := s.openPayload(rk.key(), addr, sealed, "a stored payload")
		content[graph.Hash(addr)] = h
		return err
	})
	if err != nil {
		return err
	}
	for _, m := range maps {
		for k, a := range m {
			if h, ok := content[a]; ok {
				m[k] = h
			}
		}
	}
	return nil
}

// readHash returns a row reader filling m with the (key, hash) rows that
// have a hash.
func readHash(m map[string]graph.Hash) func(Rows) error {
	return func(r Rows) error {
		var (
			key  string
			hash []byte
		)
		if err := r.Scan(&key, &hash); err != nil {
			return err
		}
		switch {
		case hash == nil:
		case len(hash) != len(graph.Hash{}):
			return corrupt("stored hash of %s is %d bytes: the database is corrupt", key, len(hash))
		default:
			m[key] = graph.Hash(hash)
		}
		return nil
	}
}

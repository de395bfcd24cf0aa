package postgres

import (
	"context"
	"strings"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// intBytes is what an integer, boolean or timestamp value counts in
// WriteStats.Bytes.
const intBytes = 8

// Commit appends a version made of c's changes against c.Parent, creating
// the state when it does not exist (c.Parent must then be 0).
//
// It locks the state's row (SELECT … FOR UPDATE), reads its locks and runs
// kilolock.CheckCommit in the same transaction: ErrStale when the current
// version is no longer c.Parent; *LockedError, *LockMismatchError or
// *ConflictError when the rules refuse it. Nothing is written when it
// returns an error, and the WriteStats are then zero. Malformed upserts (an
// object that is not JSON, a Hash or ID that does not match the object)
// are ErrInvalid: the commit is checked by kilolock.PrepareCommit before
// the transaction begins.
//
// The store sets the version's ID, State, Number, Created, Added, Changed,
// Removed and Instances (the counts are of instance objects, computed
// against the parent: an upsert equal to the current object is not a
// change and writes nothing; a removal of an object that is not there is
// ignored), and LockID from c.LockID when c.Version.LockID is empty. When
// an ID is upserted twice, the last one counts.
//
// A commit costs four round trips whatever its size: BEGIN; one batch with
// the row lock, the locks and the current intervals and payloads of what
// it touches; one batch with every write (arrays unnested server-side);
// COMMIT. A commit writing copyThreshold payloads or intervals or more
// (a first write) loads them with COPY, a round trip each.
//
// WriteStats counts, for every INSERT and UPDATE the commit runs, the rows
// the database reports affected (a payload the state already had is not
// inserted again and counts nothing: the rows INSERT … ON CONFLICT DO
// NOTHING RETURNING gives back are the ones counted), and for each such
// row the bytes of the values the statement writes: the length of each
// TEXT and BYTEA value, 8 for each integer, boolean or timestamp, 0 for
// NULL. The values of a WHERE clause, database-generated ids and index
// entries are not counted. So a commit that changes 2 of 10,000 instances
// writes 8 rows: its version, the states row, 2 closed intervals, 2 opened
// intervals and 2 new payloads.
func (s *Store) Commit(ctx context.Context, name string, c *kilolock.Commit) (*kilolock.Version, kilolock.WriteStats, error) {
	p, err := prepareCommit(c)
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	var (
		v     *kilolock.Version
		stats kilolock.WriteStats
	)
	err = s.inTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		var err error
		v, stats, err = p.apply(ctx, tx, name, c)
		return err
	})
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	return v, stats, nil
}

// preparedCommit is a kilolock.PreparedCommit with what the lookups under
// the row lock need: every ID and output name it touches, and every
// payload hash it may write.
type preparedCommit struct {
	*kilolock.PreparedCommit
	touchedIDs     []string
	touchedOutputs []string
	payloads       [][]byte
}

func prepareCommit(c *kilolock.Commit) (*preparedCommit, error) {
	pc, err := kilolock.PrepareCommit(c)
	if err != nil {
		return nil, err
	}
	p := &preparedCommit{PreparedCommit: pc}
	for i := range pc.Upserts {
		u := &pc.Upserts[i]
		p.touchedIDs = append(p.touchedIDs, u.ID)
		p.payloads = append(p.payloads, u.Instance.Hash[:])
	}
	p.touchedIDs = append(p.touchedIDs, pc.Removed...)
	for i := range pc.OutputUpserts {
		o := &pc.OutputUpserts[i]
		p.touchedOutputs = append(p.touchedOutputs, o.Name)
		p.payloads = append(p.payloads, o.Hash[:])
	}
	p.touchedOutputs = append(p.touchedOutputs, pc.OutputsRemoved...)
	return p, nil
}

// copyThreshold is the number of rows from which a commit writes payloads
// and instance intervals with COPY rather than in its batch: COPY costs a
// round trip of its own, but loads a first write of 10,000 instances
// several times faster than INSERT … SELECT FROM unnest(…), which
// materializes its arrays.
const copyThreshold = 500

// apply runs the commit in tx and returns the version and what it wrote.
func (p *preparedCommit) apply(ctx context.Context, tx pgx.Tx, name string, c *kilolock.Commit) (*kilolock.Version, kilolock.WriteStats, error) {
	var stats kilolock.WriteStats
	cur := newCurrentSet(p)
	st, err := lockState(ctx, tx, name, true, kilolock.LockExclusive, cur.lookups(name, p)...)
	if err != nil {
		return nil, stats, err
	}
	if err := kilolock.CheckCommit(&st.StateInfo, c); err != nil {
		return nil, stats, err
	}
	if st.created {
		stats.Rows++
		stats.Bytes += len(name) + len(kilolock.LockExclusive) + intBytes // name, lock_mode, created_at
	}
	ch := p.diff(cur)

	v := c.Version
	v.State = name
	v.Number = st.Current + 1
	if v.LockID == "" {
		v.LockID = c.LockID
	}
	v.Added, v.Changed, v.Removed = ch.added, ch.changed, ch.removed
	v.Instances = st.instances + ch.added - ch.removed
	if err := ch.write(ctx, tx, st.id, &v, c, &stats); err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	return &v, stats, nil
}

// currentSet is what the state holds of what a commit touches, read under
// the state's row lock: the current intervals of its instance IDs and
// outputs, and which of its payloads are stored already.
type currentSet struct {
	instances map[string]current
	outputs   map[string]current
	payloads  map[string]bool
}

// current is the current interval of an instance or output.
type current struct {
	hash []byte
	tid  pgtype.TID
}

func newCurrentSet(p *preparedCommit) *currentSet {
	return &currentSet{
		instances: make(map[string]current, len(p.touchedIDs)),
		outputs:   make(map[string]current, len(p.touchedOutputs)),
		payloads:  make(map[string]bool, len(p.payloads)),
	}
}

// lookups are the queries that fill cur, sent with the row lock. Each
// reaches its rows through a LATERAL … LIMIT 1 or a primary key, so that the
// plan probes the index per key whatever the statistics say (right after a
// first big write they say nothing yet).
func (cur *currentSet) lookups(name string, p *preparedCommit) []lookup {
	var ls []lookup
	if len(p.touchedIDs) > 0 {
		ls = append(ls, lookup{
			sql: `SELECT u.id, c.hash, c.ctid FROM unnest($2::text[]) AS u (id)
				CROSS JOIN LATERAL (SELECT hash, ctid FROM instance_intervals i
					WHERE i.state_id = (SELECT id FROM states WHERE name = $1) AND i.valid_to IS NULL AND i.instance_id = u.id
					LIMIT 1) c`,
			args: []any{name, p.touchedIDs},
			row:  scanCurrent(cur.instances),
		})
	}
	if len(p.touchedOutputs) > 0 {
		ls = append(ls, lookup{
			sql: `SELECT u.name, c.hash, c.ctid FROM unnest($2::text[]) AS u (name)
				CROSS JOIN LATERAL (SELECT hash, ctid FROM output_intervals i
					WHERE i.state_id = (SELECT id FROM states WHERE name = $1) AND i.valid_to IS NULL AND i.name = u.name
					LIMIT 1) c`,
			args: []any{name, p.touchedOutputs},
			row:  scanCurrent(cur.outputs),
		})
	}
	if len(p.payloads) > 0 {
		ls = append(ls, lookup{
			sql: `SELECT p.hash FROM unnest($2::bytea[]) AS u (hash)
				JOIN payloads p ON p.state_id = (SELECT id FROM states WHERE name = $1) AND p.hash = u.hash`,
			args: []any{name, p.payloads},
			row: func(rows pgx.Rows) error {
				var h []byte
				err := rows.Scan(&h)
				cur.payloads[string(h)] = true
				return err
			},
		})
	}
	return ls
}

// scanCurrent returns a row reader filling m with (key, hash, ctid) rows.
func scanCurrent(m map[string]current) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var (
			k string
			c current
		)
		if err := rows.Scan(&k, &c.hash, &c.tid); err != nil {
			return err
		}
		m[k] = c
		return nil
	}
}

// changes is what a commit writes, against what the state holds.
type changes struct {
	closeIDs, closeOutputs  []pgtype.TID // current intervals to end
	opens                   []openRow
	payloads                []payloadRow
	outputs                 []*kilolock.PreparedOutput // output intervals to open
	added, changed, removed int
}

// openRow is an instance interval to open.
type openRow struct {
	id, address string
	in          *graph.Instance
}

// payloadRow is a payload to insert.
type payloadRow struct {
	hash []byte
	body string
}

// diff works out the changes: an upsert equal to the current object and a
// removal of an absent one are no change.
func (p *preparedCommit) diff(cur *currentSet) *changes {
	ch := &changes{}
	addPayload := func(hash []byte, body string) {
		if cur.payloads[string(hash)] {
			return
		}
		cur.payloads[string(hash)] = true
		ch.payloads = append(ch.payloads, payloadRow{hash: hash, body: body})
	}
	for i := range p.Upserts {
		u := &p.Upserts[i]
		in := &u.Instance
		c, ok := cur.instances[u.ID]
		switch {
		case !ok:
			ch.added++
		case string(c.hash) == string(in.Hash[:]):
			continue
		default:
			ch.closeIDs = append(ch.closeIDs, c.tid)
			ch.changed++
		}
		ch.opens = append(ch.opens, openRow{id: u.ID, address: in.Address(), in: in})
		addPayload(in.Hash[:], string(in.Object))
	}
	for _, id := range p.Removed {
		if c, ok := cur.instances[id]; ok {
			ch.closeIDs = append(ch.closeIDs, c.tid)
			ch.removed++
		}
	}
	for i := range p.OutputUpserts {
		o := &p.OutputUpserts[i]
		c, ok := cur.outputs[o.Name]
		if ok && string(c.hash) == string(o.Hash[:]) {
			continue
		}
		if ok {
			ch.closeOutputs = append(ch.closeOutputs, c.tid)
		}
		ch.outputs = append(ch.outputs, o)
		addPayload(o.Hash[:], o.Body)
	}
	for _, name := range p.OutputsRemoved {
		if c, ok := cur.outputs[name]; ok {
			ch.closeOutputs = append(ch.closeOutputs, c.tid)
		}
	}
	return ch
}

// write writes the version v (State, Number and counts set; write sets ID
// and Created) and the changes: one batch, one round trip, then COPY for
// big loads. It counts what it wrote in stats.
func (ch *changes) write(ctx context.Context, tx pgx.Tx, stateID int64, v *kilolock.Version, c *kilolock.Commit, stats *kilolock.WriteStats) error {
	var checks *string
	if c.CheckResults != nil {
		s := string(c.CheckResults)
		checks = &s
	}
	var w batchWriter
	versionSQL, versionArgs, err := psql.Insert("state_versions").
		Columns("state_id", "number", "serial", "lineage", "terraform_version", "source", "actor", "lock_id",
			"base_serial", "added", "changed", "removed", "instance_count", "format", "check_results", "created_at").
		Values(stateID, v.Number, int64(v.Serial), v.Lineage, v.TerraformVersion, string(v.Source), v.Actor, v.LockID,
			int64(v.BaseSerial), v.Added, v.Changed, v.Removed, v.Instances, v.Format, checks, sq.Expr("clock_timestamp()")).
		Suffix("RETURNING id, created_at").ToSql()
	if err != nil {
		return err
	}
	w.queue(versionSQL, versionArgs, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&v.ID, &v.Created); err != nil {
			return err
		}
		v.Created = v.Created.UTC()
		stats.Rows++
		// state_id, number, serial, base_serial, 4 counts, created_at; the texts.
		stats.Bytes += 9*intBytes + len(v.Lineage) + len(v.TerraformVersion) + len(v.Source) + len(v.Actor) +
			len(v.LockID) + len(v.Format) + len(c.CheckResults)
		return nil
	})
	if c.Raw != nil {
		w.exec(stats, 1, intBytes+len(c.Raw), `INSERT INTO version_raw (version_id, raw)
			SELECT id, $3::bytea FROM state_versions WHERE state_id = $1 AND number = $2`, stateID, v.Number, c.Raw)
	}
	// Intervals close before new ones open: one current interval per
	// object. They are found by the ctid the lookup read in this
	// transaction, under the state's row lock, which every writer of the
	// state's intervals holds: so they are still the current intervals.
	// The WHERE clause is the ctid alone so that the plan is a TID scan,
	// whatever the statistics (with "AND state_id = $1" a cached generic
	// plan can walk every current interval of the state instead).
	if len(ch.closeIDs) > 0 {
		w.exec(stats, len(ch.closeIDs), intBytes, `UPDATE instance_intervals SET valid_to = $1 WHERE ctid = ANY($2::tid[])`,
			v.Number, ch.closeIDs)
	}
	if len(ch.closeOutputs) > 0 {
		w.exec(stats, len(ch.closeOutputs), intBytes, `UPDATE output_intervals SET valid_to = $1 WHERE ctid = ANY($2::tid[])`,
			v.Number, ch.closeOutputs)
	}
	copyPayloads := len(ch.payloads) >= copyThreshold
	if len(ch.payloads) > 0 && !copyPayloads {
		insertPayloads(&w, stats, stateID, ch.payloads)
	}
	copyOpens := len(ch.opens) >= copyThreshold
	if len(ch.opens) > 0 && !copyOpens {
		insertOpens(&w, stats, stateID, v.Number, ch.opens)
	}
	if len(ch.outputs) > 0 {
		insertOutputs(&w, stats, stateID, v.Number, ch.outputs)
	}
	// current_version, current_version_id, serial, lineage.
	w.exec(stats, 1, 3*intBytes+len(v.Lineage), `UPDATE states SET current_version = $2,
			current_version_id = (SELECT id FROM state_versions WHERE state_id = $1 AND number = $2),
			serial = $3, lineage = $4
		WHERE id = $1`, stateID, v.Number, int64(v.Serial), v.Lineage)

	if err := w.send(ctx, tx); err != nil {
		return err
	}
	if copyPayloads {
		if err := copyPayloadRows(ctx, tx, stats, stateID, ch.payloads); err != nil {
			return err
		}
	}
	if copyOpens {
		return copyOpenRows(ctx, tx, stats, stateID, v.Number, ch.opens)
	}
	return nil
}

// insertOutputs queues the insert of new output intervals.
func insertOutputs(w *batchWriter, stats *kilolock.WriteStats, stateID, number int64, outs []*kilolock.PreparedOutput) {
	names := make([]string, len(outs))
	hashes := make([][]byte, len(outs))
	sensitive := make([]bool, len(outs))
	size := 0
	for i, o := range outs {
		names[i], hashes[i], sensitive[i] = o.Name, o.Hash[:], o.Sensitive
		size += 3*intBytes + len(o.Name) + len(o.Hash) // state_id, valid_from, sensitive; name, hash
	}
	w.exec(stats, len(outs), -size, `INSERT INTO output_intervals (state_id, valid_from, name, hash, sensitive)
		SELECT $1::bigint, $2::bigint, * FROM unnest($3::text[], $4::bytea[], $5::boolean[])`,
		stateID, number, names, hashes, sensitive)
}

// openValues returns the text columns of an interval after state_id and
// valid_from, in the order of openColumns, and the bytes of the whole row.
func openValues(r openRow) ([11]string, int) {
	in := r.in
	res := &in.Resource
	vals := [...]string{r.id, r.address, res.Module, res.Mode, res.Type, res.Name, in.Key.JSON(), in.Deposed, res.Each, res.Provider, in.Status}
	size := 2*intBytes + len(in.Hash) // state_id, valid_from; hash
	for _, v := range vals {
		size += len(v)
	}
	return vals, size
}

var openColumns = []string{"state_id", "valid_from", "instance_id", "address", "module", "mode", "type", "name",
	"index_key", "deposed", "each", "provider", "status", "hash"}

// insertPayloads queues the insert of payloads the state lacks. ON CONFLICT
// is a guard only; the rows it returns are the ones counted.
func insertPayloads(w *batchWriter, stats *kilolock.WriteStats, stateID int64, rows []payloadRow) {
	hashes := make([][]byte, len(rows))
	bodies := make([]string, len(rows))
	size := map[string]int{}
	for i, r := range rows {
		hashes[i], bodies[i] = r.hash, r.body
		size[string(r.hash)] = intBytes + len(r.hash) + len(r.body) // state_id, hash, body
	}
	w.queue(`INSERT INTO payloads (state_id, hash, body)
		SELECT $1::bigint, h, b FROM unnest($2::bytea[], $3::text[]) AS u (h, b)
		ON CONFLICT DO NOTHING RETURNING hash`, []any{stateID, hashes, bodies},
		func(br pgx.BatchResults) error {
			return eachRow(br, func(rows pgx.Rows) error {
				var h []byte
				if err := rows.Scan(&h); err != nil {
					return err
				}
				stats.Rows++
				stats.Bytes += size[string(h)]
				return nil
			})
		})
}

// copyPayloadRows loads payloads the state lacks with COPY. The state's row
// lock guarantees no one inserted them since they were looked up.
func copyPayloadRows(ctx context.Context, tx pgx.Tx, stats *kilolock.WriteStats, stateID int64, rows []payloadRow) error {
	size := 0
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"payloads"}, []string{"state_id", "hash", "body"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			size += intBytes + len(rows[i].hash) + len(rows[i].body)
			return []any{stateID, rows[i].hash, rows[i].body}, nil
		}))
	if err != nil {
		return err
	}
	if int(n) != len(rows) {
		return corrupt("COPY payloads wrote %d rows, want %d", n, len(rows))
	}
	stats.Rows += int(n)
	stats.Bytes += size
	return nil
}

// insertOpens queues the insert of new instance intervals.
func insertOpens(w *batchWriter, stats *kilolock.WriteStats, stateID, number int64, rows []openRow) {
	cols := make([][]string, 11)
	for i := range cols {
		cols[i] = make([]string, len(rows))
	}
	hashes := make([][]byte, len(rows))
	size := 0
	for j, r := range rows {
		vals, n := openValues(r)
		for i, v := range vals {
			cols[i][j] = v
		}
		hashes[j] = r.in.Hash[:]
		size += n
	}
	args := []any{stateID, number}
	for _, c := range cols {
		args = append(args, c)
	}
	args = append(args, hashes)
	w.exec(stats, len(rows), -size, `INSERT INTO instance_intervals (`+strings.Join(openColumns, ", ")+`)
		SELECT $1::bigint, $2::bigint, * FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[])`, args...)
}

// copyOpenRows loads new instance intervals with COPY.
func copyOpenRows(ctx context.Context, tx pgx.Tx, stats *kilolock.WriteStats, stateID, number int64, rows []openRow) error {
	size := 0
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"instance_intervals"}, openColumns,
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			vals, n := openValues(rows[i])
			size += n
			row := make([]any, 0, len(openColumns))
			row = append(row, stateID, number)
			for _, v := range vals {
				row = append(row, v)
			}
			return append(row, rows[i].in.Hash[:]), nil
		}))
	if err != nil {
		return err
	}
	if int(n) != len(rows) {
		return corrupt("COPY instance_intervals wrote %d rows, want %d", n, len(rows))
	}
	stats.Rows += int(n)
	stats.Bytes += size
	return nil
}

// batchWriter queues statements with a reader of each one's result, and
// sends them all in one round trip.
type batchWriter struct {
	b       pgx.Batch
	readers []func(pgx.BatchResults) error
}

func (w *batchWriter) queue(sql string, args []any, read func(pgx.BatchResults) error) {
	w.b.Queue(sql, args...)
	w.readers = append(w.readers, read)
}

// exec queues a statement that must affect exactly want rows, and counts
// them in stats: rowBytes each, or, when rowBytes is negative, -rowBytes
// for all of them together.
func (w *batchWriter) exec(stats *kilolock.WriteStats, want, rowBytes int, sql string, args ...any) {
	w.queue(sql, args, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		n := int(tag.RowsAffected())
		if n != want {
			return corrupt("%q wrote %d rows, want %d", firstLine(sql), n, want)
		}
		stats.Rows += n
		if rowBytes < 0 {
			stats.Bytes += -rowBytes
		} else {
			stats.Bytes += n * rowBytes
		}
		return nil
	})
}

func (w *batchWriter) send(ctx context.Context, tx pgx.Tx) error {
	br := tx.SendBatch(ctx, &w.b)
	defer br.Close()
	for _, read := range w.readers {
		if err := read(br); err != nil {
			return err
		}
	}
	return br.Close()
}

func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

package sqlstore

import (
	"context"
	"encoding/json"
	"time"
	"unsafe"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/inventory"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/store/storekit"
)

// intBytes is what an integer, boolean or timestamp value counts in
// WriteStats.Bytes.
const intBytes = 8

// Commit appends a version made of c's changes against c.Parent, creating
// the state when it does not exist (c.Parent must then be 0).
//
// It locks the state's row, reads its locks and runs kilolock.CheckCommit
// in the same transaction: ErrStale when the current version is no longer
// c.Parent, or c.Expect does not hold; *LockedError, *LockMismatchError
// or *ConflictError when the rules refuse it. Nothing is written when it
// returns an error, and the WriteStats are then zero. Malformed upserts
// (an object that is not JSON, a Hash or ID that does not match the
// object) are ErrInvalid: the commit is checked by storekit.PrepareCommit
// before the transaction begins.
//
// The store sets the version's ID, State, Number, Created, Added, Changed,
// Removed and Instances (the counts are of instance objects, computed
// against the parent: an upsert equal to the current object is not a
// change and writes nothing; a removal of an object that is not there is
// ignored), and LockID from c.LockID when c.Version.LockID is empty.
//
// A commit is two batches whatever its size (on PostgreSQL, with BEGIN and
// COMMIT, four round trips): the row lock, the locks and the current
// intervals and payloads of what it touches; then every write, the keys of
// each statement travelling as one list. A big insert (a first write) may
// be loaded by the dialect's own means (COPY).
//
// WriteStats counts, for every INSERT and UPDATE the commit runs, the rows
// the database reports affected (a payload the state already had is not
// inserted again and counts nothing), and for each such row the bytes of
// the values the statement writes: the length of each text and byte
// string, 8 for each integer, boolean or timestamp, 0 for NULL. The values
// of a WHERE clause, database-generated ids and index entries are not
// counted. So a commit that changes 2 of 10,000 instances writes 8 rows: its
// version, the states row, 2 closed intervals, 2 opened intervals and 2
// new payloads.
func (s *Store) Commit(ctx context.Context, name string, c *kilolock.Commit) (*kilolock.Version, kilolock.WriteStats, error) {
	p, err := storekit.PrepareCommit(c)
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	var (
		v     *kilolock.Version
		stats kilolock.WriteStats
	)
	sc, err := s.prepareSeal(c, p)
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	err = s.write(ctx, "commit", func(tx Tx) error {
		stats = kilolock.WriteStats{}
		var err error
		v, err = s.apply(ctx, tx, name, c, p, sc, &stats, s.leaseNow())
		return err
	})
	if err != nil {
		return nil, kilolock.WriteStats{}, err
	}
	return v, stats, nil
}

// apply runs the commit c, prepared as p (and sc, what it seals), in tx.
func (s *Store) apply(ctx context.Context, tx Tx, name string, c *kilolock.Commit, p *storekit.PreparedCommit, sc *sealedCommit, stats *kilolock.WriteStats, now time.Time) (*kilolock.Version, error) {
	c.QuotaWarnings = nil
	cur := &current{instances: map[string]interval{}, outputs: map[string]interval{}, payloads: map[string]bool{}, sealed: sc}
	more := cur.lookups(name, p)
	// The state's data key, read under its row lock: whoever made it
	// held that lock, so a state never gets two.
	more.Query(scanStateKey(&cur.key), sqlStateKey, name)
	// The runs in flight, and the run of the commit's lock whatever its
	// status: what storekit.CheckRunCommit decides on.
	var runs []kilolock.ApplyRun
	queueRunRows(more, &runs, inFlight+` OR a.id = (SELECT l.run_id FROM locks l WHERE l.state_id = `+sqlStateID+` AND l.lock_id = $3)`,
		`ORDER BY a.created_at, a.id{C}`, name, now, c.LockID)
	var counts versionCounts
	queueVersionCounts(more, name, &counts)
	st, err := lockState(ctx, tx, name, true, kilolock.LockExclusive, more)
	if err != nil {
		return nil, err
	}
	if c.Expect != nil && !c.Expect.Holds(&st.State) {
		return nil, kilolock.ErrStale
	}
	if err := kilolock.CheckCommit(&st.State, c); err != nil {
		return nil, err
	}
	if err := s.commitKey(cur, c); err != nil {
		return nil, err
	}
	if err := checkRuns(ctx, tx, st, c, p, cur, runs, now); err != nil {
		return nil, err
	}
	if st.created {
		stats.Rows++
		stats.Bytes += len(name) + len(kilolock.LockExclusive) + intBytes // name, lock_mode, created_at
	}
	ch, err := diff(c, p, cur)
	if err != nil {
		return nil, err
	}
	v := c.Version
	v.State = name
	v.Number = st.Current + 1
	if v.LockID == "" {
		v.LockID = c.LockID
	}
	v.Added, v.Changed, v.Removed = ch.added, ch.changed, ch.removed
	v.Instances = counts.instances + ch.added - ch.removed
	delta := ch.managedAdded - cur.managedRemoved
	v.Managed = int(counts.managed + delta)
	if delta > 0 {
		// Only a commit that adds what quotas count can pass a limit.
		if ch.warnings, err = checkQuota(ctx, tx, st, counts.managed, delta, c.DefaultQuota); err != nil {
			return nil, err
		}
	}
	c.QuotaWarnings = ch.warnings
	if err := ch.write(ctx, tx, st.id, &v, c, cur, stats); err != nil {
		return nil, err
	}
	return &v, nil
}

// commitKey settles the data key of a commit: the state's, unwrapped,
// when it has one (a store without a keyring refuses to write into a
// sealed state in the clear), or a new one when the commit seals
// something first.
func (s *Store) commitKey(cur *current, c *kilolock.Commit) error {
	if cur.key != nil {
		k, err := s.open(cur.key)
		if err != nil {
			return err
		}
		cur.key = k
		return nil
	}
	if !cur.sealed.needsKey(c) {
		return nil
	}
	k, err := s.newStateKey()
	cur.key = k
	return err
}

// checkRuns runs storekit.CheckRunCommit when an apply run is in play:
// the commit is under a run's lock, or runs of the state are in flight.
// Only then does it read the reservations covering what the commit
// changes (one more statement), so a state without runs pays nothing.
func checkRuns(ctx context.Context, tx Tx, st *stateRow, c *kilolock.Commit, p *storekit.PreparedCommit, cur *current, runs []kilolock.ApplyRun, now time.Time) error {
	var lock *kilolock.Lock
	for i := range st.Locks {
		if c.LockID != "" && st.Locks[i].Info.ID == c.LockID {
			lock = &st.Locks[i]
		}
	}
	active := lock != nil && lock.Run != ""
	for i := range runs {
		active = active || runs[i].StatusAt(now) == kilolock.RunActive
	}
	if !active {
		return nil
	}
	keys := cur.changed(p)
	if len(keys) == 0 {
		return nil
	}
	holds, err := coveringHolds(ctx, tx, st.Name, keys, now)
	if err != nil {
		return err
	}
	return storekit.CheckRunCommit(&st.State, keys, lock, runs, holds, now)
}

// changed returns what p changes against cur, as reservations name it:
// instance IDs and "output.NAME" of what it adds, changes or removes.
func (cur *current) changed(p *storekit.PreparedCommit) []string {
	var keys []string
	for i := range p.Upserts {
		u := &p.Upserts[i]
		if c, ok := cur.instances[u.ID]; !ok || string(c.hash) != string(cur.address(u.Instance.Hash)) {
			keys = append(keys, u.ID)
		}
	}
	for _, id := range p.Removed {
		if _, ok := cur.instances[id]; ok {
			keys = append(keys, id)
		}
	}
	for i := range p.OutputUpserts {
		o := &p.OutputUpserts[i]
		if c, ok := cur.outputs[o.Name]; !ok || string(c.hash) != string(cur.address(o.Hash)) {
			keys = append(keys, "output."+o.Name)
		}
	}
	for _, n := range p.OutputsRemoved {
		if _, ok := cur.outputs[n]; ok {
			keys = append(keys, "output."+n)
		}
	}
	return keys
}

// current is what the state holds of what a commit touches, read under
// the state's row lock: the current intervals of its instance IDs and
// outputs, which of its payloads are stored already, and its data key.
type current struct {
	instances, outputs map[string]interval
	payloads           map[string]bool
	sealed             *sealedCommit
	key                *stateKey
	// managedRemoved is how many of the commit's removals are of objects
	// quotas count.
	managedRemoved int64
}

// address is what the payload of content hash h is stored under: h, or
// for a sealed payload the keyed hash of h.
func (cur *current) address(h graph.Hash) []byte {
	if cur.sealed.sensitive(h) {
		a := cur.key.dk.Address(h)
		return a[:]
	}
	return h[:]
}

// spelling is what an opened interval of in keeps of its spelling and
// canonical hash (see graph.Spelled), or NULLs: for an instance not
// parsed lean from a posted document, and for one sealed at rest, whose
// hashes of its clear bytes would tell what it holds.
func (cur *current) spelling(in *graph.Instance) (spelling, canonical []byte) {
	sp, ok := in.Spelling()
	if !ok || cur.sealed.sensitive(in.Hash) {
		return nil, nil
	}
	c := in.CanonicalHash()
	return sp[:], c[:]
}

// interval is the current interval of an instance or output: its hash and
// its row.
type interval struct {
	hash  []byte
	rowid any
}

// The lookups of a commit probe an index once per key: a subquery in the
// select list is a probe per row on both databases, whatever their
// statistics say (right after a first big write they say nothing yet). A
// state without a version has nothing to find: its first write skips them
// (the condition is evaluated once, before the keys are read). The probe
// of a current interval is one of the partial unique index *_current:
// the (state_id, valid_to) indexes hold closed intervals only, so that no
// plan can walk the state's current intervals instead (PostgreSQL's
// migration 15).
const (
	// SQLCurrentInstances reads, for each instance ID of list $2 of state
	// $1, its current interval's hash and row (NULLs when none).
	SQLCurrentInstances = `SELECT u.k,
		(SELECT i.hash FROM instance_intervals i WHERE i.state_id = ` + sqlStateID + ` AND i.instance_id = u.k AND i.valid_to IS NULL),
		(SELECT i.{rowid} FROM instance_intervals i WHERE i.state_id = ` + sqlStateID + ` AND i.instance_id = u.k AND i.valid_to IS NULL)
		FROM {texts $2} AS u WHERE ` + sqlCurrentVersion + ` > 0`
	// SQLCurrentOutputs reads the same of output names.
	SQLCurrentOutputs = `SELECT u.k,
		(SELECT o.hash FROM output_intervals o WHERE o.state_id = ` + sqlStateID + ` AND o.name = u.k AND o.valid_to IS NULL),
		(SELECT o.{rowid} FROM output_intervals o WHERE o.state_id = ` + sqlStateID + ` AND o.name = u.k AND o.valid_to IS NULL)
		FROM {texts $2} AS u WHERE ` + sqlCurrentVersion + ` > 0`
	sqlStoredPayloads = `SELECT u.k, (SELECT 1 FROM payloads p WHERE p.state_id = ` + sqlStateID + ` AND p.hash = u.k)
		FROM {bytes $2} AS u WHERE ` + sqlCurrentVersion + ` > 0`
	// sqlRemovedManaged counts the removals of objects that quotas count
	// (quota.Counts: a managed resource's current object), a probe each.
	sqlRemovedManaged = `SELECT count(*) FROM {texts $2} AS u WHERE EXISTS (SELECT 1 FROM instance_intervals i
		WHERE i.state_id = ` + sqlStateID + ` AND i.instance_id = u.k AND i.valid_to IS NULL AND i.mode = 'managed' AND i.deposed = '')`
)

// lookups are the queries that fill cur, sent with the row lock.
func (cur *current) lookups(name string, p *storekit.PreparedCommit) *Batch {
	var ids, outputs []string
	var hashes [][]byte
	// A sealed payload's address needs the data key read in the same
	// batch: it is inserted unless already there instead (see write).
	for i := range p.Upserts {
		ids = append(ids, p.Upserts[i].ID)
		if h := p.Upserts[i].Instance.Hash; !cur.sealed.sensitive(h) {
			hashes = append(hashes, h[:])
		}
	}
	ids = append(ids, p.Removed...)
	for i := range p.OutputUpserts {
		outputs = append(outputs, p.OutputUpserts[i].Name)
		if h := p.OutputUpserts[i].Hash; !cur.sealed.sensitive(h) {
			hashes = append(hashes, h[:])
		}
	}
	outputs = append(outputs, p.OutputsRemoved...)
	b := &Batch{}
	if len(ids) > 0 {
		b.Query(readCurrent(cur.instances), SQLCurrentInstances, name, ids)
	}
	if len(outputs) > 0 {
		b.Query(readCurrent(cur.outputs), SQLCurrentOutputs, name, outputs)
	}
	if len(p.Removed) > 0 {
		b.Query(func(r Rows) error { return r.Scan(&cur.managedRemoved) }, sqlRemovedManaged, name, p.Removed)
	}
	if len(hashes) > 0 {
		b.Query(func(r Rows) error {
			var (
				h      []byte
				stored *int64
			)
			err := r.Scan(&h, &stored)
			if stored != nil {
				cur.payloads[string(h)] = true
			}
			return err
		}, sqlStoredPayloads, name, hashes)
	}
	return b
}

// readCurrent returns a row reader filling m with the (key, hash, rowid)
// rows of keys that have a current interval.
func readCurrent(m map[string]interval) func(Rows) error {
	return func(r Rows) error {
		var (
			k  string
			iv interval
		)
		if err := r.Scan(&k, &iv.hash, &iv.rowid); err != nil {
			return err
		}
		if iv.hash != nil {
			m[k] = iv
		}
		return nil
	}
}

// changes is what a commit writes, against what the state holds.
type changes struct {
	closeIDs, closeOutputs  []any // rows of current intervals to end
	opens                   []*graph.Instance
	payloads                []payload
	sealed                  [][]any // state_id, address, masked body, sealed object
	outputs                 []*storekit.PreparedOutput
	added, changed, removed int
	// managedAdded counts the added objects quotas count (quota.Counts).
	managedAdded int64
	// warnings are the quota warnings the version records.
	warnings []kilolock.QuotaCount
}

// payload is a payload row to insert: its address and its body, or the
// instance whose object it is (a lean one's is read back as the row is
// sent, see kilolock.Commit.Object).
type payload struct {
	addr []byte
	body string
	in   *graph.Instance
}

// diff works out the changes: an upsert equal to the current object and a
// removal of an absent one are no change.
func diff(c *kilolock.Commit, p *storekit.PreparedCommit, cur *current) (*changes, error) {
	ch := &changes{}
	addPayload := func(h graph.Hash, body string, in *graph.Instance) error {
		addr := cur.address(h)
		if cur.payloads[string(addr)] {
			return nil
		}
		cur.payloads[string(addr)] = true
		if cur.sealed.sensitive(h) {
			if in != nil {
				obj, err := c.Object(in)
				if err != nil {
					return err
				}
				body = string(obj)
			}
			m := cur.sealed.masked[h]
			ch.sealed = append(ch.sealed, []any{nil, addr, string(m), sealPayload(cur.key, addr, h, []byte(body))})
			return nil
		}
		ch.payloads = append(ch.payloads, payload{addr: addr, body: body, in: in})
		return nil
	}
	for i := range p.Upserts {
		u := &p.Upserts[i]
		in := u.Instance
		c, ok := cur.instances[u.ID]
		switch {
		case !ok:
			ch.added++
			if quota.Counts(in.Resource.Mode, in.Deposed) {
				ch.managedAdded++
			}
		case string(c.hash) == string(cur.address(in.Hash)):
			continue
		default:
			ch.closeIDs = append(ch.closeIDs, c.rowid)
			ch.changed++
		}
		ch.opens = append(ch.opens, in)
		// The object itself, not a copy, when the upsert holds it, else
		// read back as its row is sent: a first write of a large state
		// would otherwise hold all of its objects (twice).
		if err := addPayload(in.Hash, "", in); err != nil {
			return nil, err
		}
	}
	for _, id := range p.Removed {
		if c, ok := cur.instances[id]; ok {
			ch.closeIDs = append(ch.closeIDs, c.rowid)
			ch.removed++
		}
	}
	for i := range p.OutputUpserts {
		o := &p.OutputUpserts[i]
		c, ok := cur.outputs[o.Name]
		if ok && string(c.hash) == string(cur.address(o.Hash)) {
			continue
		}
		if ok {
			ch.closeOutputs = append(ch.closeOutputs, c.rowid)
		}
		ch.outputs = append(ch.outputs, o)
		if err := addPayload(o.Hash, o.Body, nil); err != nil {
			return nil, err
		}
	}
	for _, name := range p.OutputsRemoved {
		if c, ok := cur.outputs[name]; ok {
			ch.closeOutputs = append(ch.closeOutputs, c.rowid)
		}
	}
	return ch, nil
}

var (
	versionColumns = []string{"state_id", "number", "serial", "lineage", "terraform_version", "source", "actor", "lock_id",
		"base_serial", "merged", "added", "changed", "removed", "instance_count", "managed_count", "format", "check_results"}
	openColumns = []string{"state_id", "valid_from", "instance_id", "address", "module", "mode", "type", "name",
		"index_key", "deposed", "each", "provider", "status", "hash", "ident_key", "ident_hash", "spelling", "canonical_hash", "search_text"}
	outputColumns  = []string{"state_id", "valid_from", "name", "hash", "sensitive"}
	payloadColumns = []string{"state_id", "hash", "body"}
)

// write writes the version v (State, Number and counts set; write sets ID
// and Created) and the changes, in one batch, and counts what it wrote in
// stats.
func (ch *changes) write(ctx context.Context, tx Tx, stateID int64, v *kilolock.Version, c *kilolock.Commit, cur *current, stats *kilolock.WriteStats) error {
	var checks any
	if c.CheckResults != nil {
		checks = string(c.CheckResults)
	}
	b := &Batch{}
	version := []any{stateID, v.Number, int64(v.Serial), v.Lineage, v.TerraformVersion, string(v.Source), v.Actor, v.LockID,
		int64(v.BaseSerial), v.Merged, v.Added, v.Changed, v.Removed, v.Instances, int64(v.Managed), v.Format, checks}
	b.Query(func(r Rows) error {
		stats.Rows++
		stats.Bytes += rowBytes(version) + intBytes // and created_at
		return r.Scan(&v.ID, &v.Created)
	}, `INSERT INTO state_versions (`+join(versionColumns)+`, created_at) VALUES (`+placeholders(1, len(version))+`, {now})
		RETURNING id, created_at`, version...)
	if k := cur.key; k != nil && k.fresh {
		b.Exec(counter(stats, 1, len(k.keyID)+len(k.wrapped)+2*intBytes), `INSERT INTO state_keys (state_id, key_id, wrapped, created_at, wrapped_at)
			VALUES ($1, $2, $3, {now}, {now})`, stateID, k.keyID, k.wrapped)
	}
	if c.Raw != nil {
		raw, sealed := c.Raw, false
		if cur.key != nil && cur.key.dk != nil {
			raw, sealed = cur.key.dk.Seal(c.Raw, rawAAD(v.Number)), true
		}
		b.Exec(counter(stats, 1, 2*intBytes+len(raw)), `INSERT INTO version_raw (version_id, raw, sealed)
			VALUES ((SELECT id FROM state_versions WHERE state_id = $1 AND number = $2), $3, $4)`, stateID, v.Number, raw, sealed)
	}
	// Intervals close before new ones open: one current interval per
	// object. They are found by the row the lookup read in this
	// transaction, under the state's row lock, which every writer of the
	// state's intervals holds: so they are still the current intervals.
	if len(ch.closeIDs) > 0 {
		// A closed interval keeps no search text: only the current
		// objects are searched, and their text is all the index holds.
		b.Exec(counter(stats, len(ch.closeIDs), intBytes), `UPDATE instance_intervals SET valid_to = $1, search_text = NULL
			WHERE {rowidin $2}`, v.Number, ch.closeIDs)
	}
	if len(ch.closeOutputs) > 0 {
		b.Exec(counter(stats, len(ch.closeOutputs), intBytes), `UPDATE output_intervals SET valid_to = $1
			WHERE {rowidin $2}`, v.Number, ch.closeOutputs)
	}
	// A lean upsert's object is read as its row is sent; an error doing so
	// (its bytes changed underneath) fails the commit.
	var readErr error
	insert(b, stats, "payloads", payloadColumns, stateID, len(ch.payloads), func(i int) []any {
		pl := &ch.payloads[i]
		body := pl.body
		if pl.in != nil {
			obj, err := c.Object(pl.in)
			if err != nil && readErr == nil {
				readErr = err
			}
			// Not a copy: the object is never changed, and the string
			// lives only as long as the row is being sent.
			body = unsafe.String(unsafe.SliceData(obj), len(obj))
		}
		return []any{nil, pl.addr, body}
	})
	for _, row := range ch.sealed {
		// Inserted unless the state has it already, which only the
		// data key told (see lookups): such a row counts nothing.
		row[0] = stateID
		size := rowBytes(row)
		b.Exec(func(n int64) error {
			stats.Rows += int(n)
			stats.Bytes += int(n) * size
			return nil
		}, `INSERT INTO payloads (state_id, hash, body, sealed) VALUES ($1, $2, $3, $4) ON CONFLICT (state_id, hash) DO NOTHING`, row...)
	}
	// The opened intervals' rows are made as they are sent: a first write
	// of a large state would otherwise hold them all at once beside its
	// graph (about 600 bytes an instance).
	// Each opened object's identity key, which the duplicates across
	// states group by (inventory.IdentityKey), and its search text, which
	// the text index holds (inventory.SearchText), are worked out once,
	// here: an unchanged object opens no interval, and is not read again.
	insert(b, stats, "instance_intervals", openColumns, stateID, len(ch.opens), func(i int) []any {
		in := ch.opens[i]
		r := &in.Resource
		obj, err := c.Object(in)
		if err != nil && readErr == nil {
			readErr = err
		}
		identKey, identHash, text := inventory.Record(r.Mode, r.Type, in.Deposed, obj)
		spelling, canonical := cur.spelling(in)
		return []any{nil, v.Number, in.ID(), in.Address(), r.Module, r.Mode, r.Type, r.Name, in.Key.JSON(), in.Deposed,
			r.Each, r.Provider, in.Status, cur.address(in.Hash), identKey, identHash, spelling, canonical, text}
	})
	insert(b, stats, "output_intervals", outputColumns, stateID, len(ch.outputs), func(i int) []any {
		o := ch.outputs[i]
		return []any{nil, v.Number, o.Name, cur.address(o.Hash), o.Sensitive}
	})
	queueWarnings(b, stats, stateID, v, c, ch.warnings)
	// current_version, current_version_id, serial, lineage,
	// client_encryption (NULL for a plaintext version).
	enc, encLen, err := clientEncryption(c)
	if err != nil {
		return err
	}
	b.Exec(counter(stats, 1, 3*intBytes+len(v.Lineage)+encLen), `UPDATE states SET current_version = $2,
			current_version_id = (SELECT id FROM state_versions WHERE state_id = $1 AND number = $2),
			serial = $3, lineage = $4, client_encryption = $5
		WHERE id = $1`, stateID, v.Number, int64(v.Serial), v.Lineage, enc)
	if err := tx.Send(ctx, b); err != nil {
		return err
	}
	return readErr // the transaction is rolled back
}

// clientEncryption is c.ClientEncryption as the states row keeps it: JSON,
// nil (NULL) for a plaintext version; n is its length.
func clientEncryption(c *kilolock.Commit) (v any, n int, err error) {
	if c.Version.Format != kilolock.FormatOpaque {
		return nil, 0, nil
	}
	ce := c.ClientEncryption
	if ce == nil {
		ce = &kilolock.ClientEncryption{}
	}
	if ce.KeyProviders == nil {
		ce = &kilolock.ClientEncryption{Version: ce.Version, KeyProviders: []kilolock.KeyProvider{}, MoreKeyProviders: ce.MoreKeyProviders}
	}
	b, err := json.Marshal(ce)
	if err != nil {
		return nil, 0, &kilolock.InvalidError{Code: "invalid_commit", Message: "client encryption: " + err.Error()}
	}
	return string(b), len(b), nil
}

// insert queues the insert of n rows, row(i) giving row i (its first
// value, the state id, set here), into table, counting each row's values
// as it is sent.
func insert(b *Batch, stats *kilolock.WriteStats, table string, columns []string, stateID int64, n int, row func(i int) []any) {
	if n == 0 {
		return
	}
	size := 0
	b.InsertRows(func(got int64) error {
		if int(got) != n {
			return corrupt("insert into %s wrote %d rows, want %d", table, got, n)
		}
		stats.Rows += n
		stats.Bytes += size
		return nil
	}, table, columns, n, func(i int) []any {
		r := row(i)
		r[0] = stateID
		size += rowBytes(r)
		return r
	})
}

// counter returns the reader of a statement that must affect exactly want
// rows, counting them in stats, rowBytes each.
func counter(stats *kilolock.WriteStats, want, rowBytes int) func(int64) error {
	return func(n int64) error {
		if int(n) != want {
			return corrupt("a commit's statement wrote %d rows, want %d", n, want)
		}
		stats.Rows += want
		stats.Bytes += want * rowBytes
		return nil
	}
}

// rowBytes is what the values of a row count in WriteStats.Bytes.
func rowBytes(values []any) int {
	n := 0
	for _, v := range values {
		n += ValueSize(v)
	}
	return n
}

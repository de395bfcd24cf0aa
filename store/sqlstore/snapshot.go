package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/arena"
)

var (
	_ kilolock.SnapshotStreamer = (*Store)(nil)
	_ kilolock.IndexReader      = (*Store)(nil)
)

const versionSelect = `v.id, s.name, v.number, v.serial, v.lineage, v.terraform_version, v.source, v.actor,
	v.lock_id, v.base_serial, v.merged, v.created_at, v.added, v.changed, v.removed, v.instance_count, v.managed_count, v.format`

func scanVersion(row Row, extra ...any) (*kilolock.Version, error) {
	var (
		v                  kilolock.Version
		serial, baseSerial int64
		source             string
	)
	dest := []any{&v.ID, &v.State, &v.Number, &serial, &v.Lineage, &v.TerraformVersion, &source, &v.Actor,
		&v.LockID, &baseSerial, &v.Merged, &v.Created, &v.Added, &v.Changed, &v.Removed, &v.Instances, &v.Managed, &v.Format}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	v.Serial, v.BaseSerial, v.Source = uint64(serial), uint64(baseSerial), kilolock.Source(source)
	return &v, nil
}

// Snapshot loads version number of a state: its record, the instance
// objects and outputs valid at it (ordered by instance ID and by name), its
// check results and raw document. ErrNotFound when the state or the version
// does not exist.
//
// It reads in one transaction and two batches: the version row, then the
// intervals valid at number. The current version reads the current
// intervals through their partial unique indexes; an older one filters the
// intervals that began at or before it.
func (s *Store) Snapshot(ctx context.Context, name string, number int64) (*kilolock.Snapshot, error) {
	return s.snapshot(ctx, name, number, snapshotPart{})
}

// SnapshotEach is Snapshot giving each instance to each in turn instead of
// keeping them (see kilolock.SnapshotStreamer): one read transaction, the
// rows read as they come.
func (s *Store) SnapshotEach(ctx context.Context, name string, number int64, each func(*kilolock.Instance) error) (*kilolock.Snapshot, error) {
	return s.snapshot(ctx, name, number, snapshotPart{each: each})
}

// SnapshotHashes is Snapshot without its instances or raw document: the
// content hash of each instance by ID instead (kilolock.IndexReader), read
// from the intervals without touching the payloads, but for those sealed
// at rest (see contentHashes).
func (s *Store) SnapshotHashes(ctx context.Context, name string, number int64) (*kilolock.Snapshot, map[string]graph.Hash, map[graph.Hash]graph.Spelled, error) {
	hashes, spelled := map[string]graph.Hash{}, map[graph.Hash]graph.Spelled{}
	snap, err := s.snapshot(ctx, name, number, snapshotPart{hashes: hashes, spelled: spelled})
	if err != nil {
		return nil, nil, nil, err
	}
	return snap, hashes, spelled, nil
}

// SnapshotSome returns the instances of version number whose IDs are
// among ids, objects and all, in ID order (kilolock.IndexReader): one
// probe of the intervals' primary key per ID.
func (s *Store) SnapshotSome(ctx context.Context, name string, number int64, ids []string) ([]kilolock.Instance, error) {
	if len(ids) == 0 {
		ids = []string{}
	}
	snap, err := s.snapshot(ctx, name, number, snapshotPart{ids: ids})
	if err != nil {
		return nil, err
	}
	return snap.Instances, nil
}

// SnapshotOutputs is Snapshot without its instances or raw document
// (kilolock.IndexReader): the version and its outputs.
func (s *Store) SnapshotOutputs(ctx context.Context, name string, number int64) (*kilolock.Snapshot, error) {
	return s.snapshot(ctx, name, number, snapshotPart{outputs: true})
}

// snapshotPart is what snapshot reads of a version: everything (the zero
// snapshotPart), its instances given to each one at a time, only the
// hashes of its instances (into hashes; no raw document either), only
// the instances of ids (no outputs either), or only its outputs (no raw
// document either).
type snapshotPart struct {
	outputs bool
	each    func(*kilolock.Instance) error
	hashes  map[string]graph.Hash
	// spelled, with hashes, gets the instances' spellings the
	// intervals keep.
	spelled map[graph.Hash]graph.Spelled
	ids     []string
}

func (s *Store) snapshot(ctx context.Context, name string, number int64, part snapshotPart) (*kilolock.Snapshot, error) {
	snap := &kilolock.Snapshot{}
	each := part.each
	raw := "r.raw, r.sealed"
	if part.hashes != nil || part.ids != nil || part.outputs {
		raw = "NULL, NULL"
	}
	err := s.read(ctx, "snapshot", func(tx Tx) error {
		var (
			stateID, current int64
			checks           *string
			rawSealed        *bool
			rk               rowKey
		)
		v, err := scanVersion(tx.QueryRow(ctx, `SELECT `+versionSelect+`, s.id, s.current_version, v.check_results, `+raw+`,
				k.key_id, k.wrapped
			FROM state_versions v JOIN states s ON s.id = v.state_id
			LEFT JOIN version_raw r ON r.version_id = v.id
			LEFT JOIN state_keys k ON k.state_id = s.id
			WHERE s.name = $1 AND v.number = $2`, name, number), &stateID, &current, &checks, &snap.Raw, &rawSealed, &rk.keyID, &rk.wrapped)
		if errors.Is(err, ErrNoRows) {
			return noVersion(ctx, tx, name, fmt.Sprintf("version %d", number))
		}
		if err != nil {
			return err
		}
		snap.Version = *v
		if rawSealed != nil && *rawSealed {
			if snap.Raw, err = s.openRaw(rk.key(), snap.Raw, v); err != nil {
				return err
			}
		}
		if checks != nil {
			snap.CheckResults = []byte(*checks)
		}
		valid := `i.valid_from <= $2 AND (i.valid_to IS NULL OR i.valid_to > $2)`
		args := []any{stateID, number}
		if number == current && part.ids == nil {
			valid, args = `i.valid_to IS NULL`, []any{stateID}
		}
		switch {
		case part.ids != nil:
			snap.Instances = make([]kilolock.Instance, 0, len(part.ids))
		case each == nil && part.hashes == nil && !part.outputs:
			snap.Instances = make([]kilolock.Instance, 0, max(v.Instances, 0))
		}
		snap.Outputs = []kilolock.Output{}
		b := &Batch{}
		var (
			shared  interner
			objects arena.Arena
		)
		keep := func(r Rows) error {
			iv, err := s.scanInstance(r, &objects)
			shared.resource(&iv.Instance.Resource)
			snap.Instances = append(snap.Instances, iv.Instance)
			return err
		}
		instances := `SELECT ` + instanceSelect + ` FROM instance_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
			WHERE i.state_id = $1 AND ` + valid
		switch {
		case part.outputs:
			// No instance: the outputs' query below only.
		case part.hashes != nil:
			b.Query(readSpelled(part.hashes, part.spelled), `SELECT i.instance_id, i.hash, i.spelling, i.canonical_hash
				FROM instance_intervals i WHERE i.state_id = $1 AND `+valid, args...)
		case part.ids != nil:
			// Only these instances: no outputs either.
			b.Query(keep, instances+` AND i.instance_id IN (SELECT k FROM {texts $3} AS u) ORDER BY i.instance_id{C}`, append(args, part.ids)...)
			return tx.Send(ctx, b)
		case each != nil:
			b.Query(func(r Rows) error {
				iv, err := s.scanInstance(r, nil)
				if err != nil {
					return err
				}
				shared.resource(&iv.Instance.Resource)
				if err := each(&iv.Instance); err != nil {
					return &callerError{err}
				}
				return nil
			}, instances+` ORDER BY i.instance_id{C}`, args...)
		default:
			b.Query(keep, instances+` ORDER BY i.instance_id{C}`, args...)
		}
		b.Query(func(r Rows) error {
			var (
				name               string
				hash, body, sealed []byte
				rk                 rowKey
			)
			if err := r.Scan(&name, &hash, &body, &sealed, &rk.keyID, &rk.wrapped); err != nil {
				return err
			}
			if sealed != nil {
				var err error
				if _, body, err = s.openPayload(rk.key(), hash, sealed, "stored output "+name); err != nil {
					return err
				}
			}
			snap.Outputs = append(snap.Outputs, graph.NewOutput(name, body))
			return nil
		}, `SELECT i.name, i.hash, p.body, p.sealed, `+sealedKey("i")+` FROM output_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
			WHERE i.state_id = $1 AND `+valid+` ORDER BY i.name{C}`, args...)
		if err := tx.Send(ctx, b); err != nil || part.hashes == nil {
			return err
		}
		return s.contentHashes(ctx, tx, name, part.hashes)
	})
	if err != nil {
		return nil, callersOwn(err)
	}
	if s.resort {
		inOrder(snap.Instances, func(a, b kilolock.Instance) int { return strings.Compare(a.ID(), b.ID()) })
		inOrder(snap.Outputs, func(a, b kilolock.Output) int { return strings.Compare(a.Name, b.Name) })
	}
	return snap, nil
}

// readSpelled returns a row reader filling hashes with the (instance ID,
// hash) of each row and spelled with its spelling and canonical hash,
// when it keeps them (see graph.Spelled).
func readSpelled(hashes map[string]graph.Hash, spelled map[graph.Hash]graph.Spelled) func(Rows) error {
	const size = len(graph.Hash{})
	return func(r Rows) error {
		var id string
		var hash, spelling, canonical []byte
		if err := r.Scan(&id, &hash, &spelling, &canonical); err != nil {
			return err
		}
		if hash == nil {
			return nil
		}
		if len(hash) != size || spelling != nil && len(spelling) != size || canonical != nil && len(canonical) != size {
			return corrupt("stored hashes of %s are %d, %d and %d bytes: the database is corrupt", id, len(hash), len(spelling), len(canonical))
		}
		hashes[id] = graph.Hash(hash)
		if spelling != nil && canonical != nil {
			spelled[graph.Hash(spelling)] = graph.Spelled{Hash: graph.Hash(hash), Canonical: graph.Hash(canonical)}
		}
		return nil
	}
}

// inOrder sorts xs by cmp unless they are sorted already.
func inOrder[T any](xs []T, cmp func(a, b T) int) {
	if !slices.IsSortedFunc(xs, cmp) {
		slices.SortStableFunc(xs, cmp)
	}
}

// noVersion is the ErrNotFound of a state that exists without what was
// asked for, or of a missing state.
func noVersion(ctx context.Context, tx Tx, name, what string) error {
	var exists bool
	if err := tx.QueryRow(ctx, sqlStateExists, name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return notFound(name)
	}
	return fmt.Errorf("state %q has no %s: %w", name, what, kilolock.ErrNotFound)
}

// instanceSelect are the columns scanInstance reads, with valid_from and
// valid_to last; instanceColumns all but those two.
var (
	instanceColumns = `i.instance_id, i.module, i.mode, i.type, i.name, i.each, i.provider, i.hash, p.body,
	p.sealed, ` + sealedKey("i")
	instanceSelect = instanceColumns + `, i.valid_from, coalesce(i.valid_to, 0)`
)

// interner makes equal strings one: the instances of a loaded version
// share their resource headers' strings (module, type, provider…) as a
// parsed state does, instead of each row holding copies of its own. The
// few distinct modules, types and providers are kept in a map; a name is
// shared with the row before it (rows come in instance ID order, so the
// instances of one resource are adjacent), which a map of every name
// would cost more than it saves.
type interner struct {
	seen map[string]string
	name string
}

func (in *interner) of(s string) string {
	if v, ok := in.seen[s]; ok {
		return v
	}
	if in.seen == nil {
		in.seen = map[string]string{}
	}
	in.seen[s] = s
	return s
}

func (in *interner) resource(r *graph.Resource) {
	r.Module, r.Mode, r.Type = in.of(r.Module), in.of(r.Mode), in.of(r.Type)
	r.Each, r.Provider = in.of(r.Each), in.of(r.Provider)
	if r.Name == in.name {
		r.Name = in.name
	}
	in.name = r.Name
}

// scanInstance reads an interval's instance object (opening it when it is
// sealed) and checks its body against its hash. With objects set, the body
// is packed into it, as a parse packs a state's objects.
func (s *Store) scanInstance(r Rows, objects *arena.Arena) (kilolock.InstanceInterval, error) {
	var (
		id                 string
		res                graph.Resource
		hash, body, sealed []byte
		rk                 rowKey
		iv                 kilolock.InstanceInterval
	)
	err := r.Scan(&id, &res.Module, &res.Mode, &res.Type, &res.Name, &res.Each, &res.Provider, &hash, &body, &sealed, &rk.keyID, &rk.wrapped, &iv.ValidFrom, &iv.ValidTo)
	if err != nil {
		return iv, err
	}
	want := hash
	if sealed != nil {
		var h graph.Hash
		if h, body, err = s.openPayload(rk.key(), hash, sealed, "stored instance "+id); err != nil {
			return iv, err
		}
		want = h[:]
	}
	if objects != nil {
		body = objects.Keep(body)
	}
	if iv.Instance, err = graph.NewInstance(res, body); err != nil {
		return iv, corrupt("stored instance %s: %v", id, err)
	}
	if string(iv.Instance.Hash[:]) != string(want) {
		return iv, corrupt("stored instance %s: its body does not hash to %x: the database is corrupt", id, hash)
	}
	return iv, nil
}

// History lists versions newest first: at most opts.Limit (50 when 0 or
// less), only those numbered below opts.Before when it is above 0.
// ErrNotFound when the state does not exist; an empty list when it has no
// versions.
func (s *Store) History(ctx context.Context, name string, opts kilolock.HistoryOptions) ([]kilolock.Version, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	before := opts.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	return ofState(ctx, s, "history", name, func(r Rows, v *kilolock.Version) (bool, error) {
		got, err := scanVersion(r)
		if err == nil {
			*v = *got
		}
		return err == nil, err
	}, `SELECT `+versionSelect+` FROM state_versions v JOIN states s ON s.id = v.state_id
		WHERE v.state_id = `+sqlStateID+` AND v.number < $2 ORDER BY v.number DESC LIMIT $3`, name, before, limit)
}

// VersionBySerial returns the newest version carrying serial, through the
// (state_id, serial, number) index. ErrNotFound when the state does not
// exist or no version has serial.
func (s *Store) VersionBySerial(ctx context.Context, name string, serial uint64) (*kilolock.Version, error) {
	return readValue(ctx, s, "version by serial", func(tx Tx) (*kilolock.Version, error) {
		v, err := scanVersion(tx.QueryRow(ctx, `SELECT `+versionSelect+` FROM state_versions v JOIN states s ON s.id = v.state_id
			WHERE v.state_id = `+sqlStateID+` AND v.serial = $2 ORDER BY v.number DESC LIMIT 1`, name, int64(serial)))
		if errors.Is(err, ErrNoRows) {
			return nil, noVersion(ctx, tx, name, fmt.Sprintf("version with serial %d", serial))
		}
		return v, err
	})
}

// InstanceHistory lists the intervals of the instance objects at address
// (an instance or a resource address), ordered by valid_from, then ID in
// byte order, their bounds read as the versions they stand for
// (sqlKeptAt). It range-scans the (state_id, instance_id in byte order,
// valid_from) index over kilolock.InstanceIDRange(address), with a probe
// of the state's versions per bound. ErrNotFound when the state does not
// exist.
func (s *Store) InstanceHistory(ctx context.Context, name, address string) ([]kilolock.InstanceInterval, error) {
	lo, hi := kilolock.InstanceIDRange(address)
	from := sqlKeptAt("i.state_id", "i.valid_from")
	out, err := ofState(ctx, s, "instance history", name, func(r Rows, iv *kilolock.InstanceInterval) (bool, error) {
		var err error
		*iv, err = s.scanInstance(r, nil)
		return err == nil && kilolock.MatchesAddress(&iv.Instance, address), err
	}, `SELECT `+instanceColumns+`, `+from+`, coalesce(`+sqlKeptAt("i.state_id", "i.valid_to")+`, 0)
		FROM instance_intervals i JOIN payloads p ON p.state_id = i.state_id AND p.hash = i.hash
		WHERE i.state_id = `+sqlStateID+` AND i.instance_id{C} >= $2 AND i.instance_id{C} < $3
		ORDER BY `+from+`, i.instance_id{C}`, name, lo, hi)
	if err == nil && s.resort {
		inOrder(out, func(a, b kilolock.InstanceInterval) int {
			return cmp.Or(cmp.Compare(a.ValidFrom, b.ValidFrom), strings.Compare(a.Instance.ID(), b.Instance.ID()))
		})
	}
	return out, err
}

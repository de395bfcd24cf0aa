package kilolock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kilolock/kilolock/graph"
)

// errNotStreamed: a version streamEntry does not load (one that keeps
// bytes its rows do not render, an opaque one); storedEntry loads it
// whole.
var errNotStreamed = errors.New("not loaded a part at a time")

// objectRef is where a loaded instance's object lies in the spill.
type objectRef struct {
	at int64
	n  int
}

// streamEntry loads st's current version from a store that streams it
// (SnapshotStreamer) holding one object at a time: each object goes to a
// spill as it comes, in the store's order (in memory, and past
// fileMinBytes in a spool file: a version of a few hundred instances is
// loaded without a file); the instances, objects dropped, are put in
// Terraform's order and rendered (graph.State.RenderLeanTo) into the
// bytes the version keeps, each object read back from the spill in turn.
// The result is a lean index and the kept bytes, as a write leaves them:
// loading a 10,000-instance state costs its headers in memory, not its
// objects.
func (e *Engine) streamEntry(ctx context.Context, st *State, ss SnapshotStreamer) (*cacheEntry, error) {
	spill := &docWriter{dir: e.spoolDir}
	defer func() {
		if spill.file != nil {
			spill.file.Close()
		}
	}()
	// The version's count, when it can be had with one small read: the
	// instances are most of what a load holds, and a slice grown by
	// doubling would hold them nearly three times at its last doubling.
	n := 0
	if vs, err := e.store.History(ctx, st.Name, HistoryOptions{Limit: 1}); err == nil && len(vs) == 1 && vs[0].Number == st.Current {
		n = max(vs[0].Instances, 0)
	}
	var (
		w         = bufio.NewWriterSize(spill, 64<<10)
		instances = make([]graph.Instance, 0, n)
		refs      = make([]objectRef, 0, n)
		at        int64
	)
	snap, err := ss.SnapshotEach(ctx, st.Name, st.Current, func(in *Instance) error {
		if _, err := w.Write(in.Object); err != nil {
			return fmt.Errorf("spill an object: %w", err)
		}
		refs = append(refs, objectRef{at, len(in.Object)})
		at += int64(len(in.Object))
		instances = append(instances, *in)
		instances[len(instances)-1].Object = nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	v := snap.Version
	if v.Format == FormatOpaque || snap.Raw != nil {
		return nil, errNotStreamed
	}
	if err = w.Flush(); err == nil {
		err = spill.err
	}
	if err != nil {
		return nil, fmt.Errorf("version %d of %q: spill its objects: %w", v.Number, v.State, err)
	}
	inTerraformOrder(instances, refs)
	snap.Instances = instances
	g, err := graphOf(snap)
	if err != nil {
		return nil, err
	}
	doc := &docWriter{dir: e.spoolDir}
	doc.h.SetSeed(docSeed)
	objects := spill.doc()
	var buf []byte
	_, err = g.RenderLeanTo(doc, g.Format, func(i int) ([]byte, error) {
		r := refs[i]
		if objects.file == nil {
			return objects.mem[r.at : r.at+int64(r.n)], nil
		}
		buf = slices.Grow(buf[:0], r.n)[:r.n]
		if _, err := objects.ReadAt(buf, r.at); err != nil {
			return nil, fmt.Errorf("read a spilled object back: %w", err)
		}
		return buf, nil
	})
	if err == nil {
		err = doc.err
	}
	if err != nil {
		return nil, fmt.Errorf("version %d of %q: render its bytes: %w", v.Number, v.State, err)
	}
	return e.cache.put(st.Name, keptBody(v, doc.doc(), doc.h.Sum64()), g), nil
}

// inTerraformOrder sorts instances into Terraform's order (graph.State.
// Sort), each with its object's place in refs, in place: a state's
// instances are not copied (they are most of what a load holds).
func inTerraformOrder(instances []graph.Instance, refs []objectRef) {
	order := make([]int32, len(instances))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return instances[a].Compare(&instances[b]) })
	// order[i] is the instance that goes to i: follow each cycle once,
	// moving one instance out of the way at a time.
	for start := range order {
		if order[start] < 0 || int(order[start]) == start {
			continue
		}
		held, heldRef := instances[start], refs[start]
		i := start
		for {
			j := int(order[i])
			order[i] = -1
			if j == start {
				instances[i], refs[i] = held, heldRef
				break
			}
			instances[i], refs[i] = instances[j], refs[j]
			i = j
		}
	}
}

// coldIndex is what a write on a state whose current version the cache
// let go of (or never held: a kld that just started, another replica's
// commit) is diffed against, read from an IndexReader: the version's
// record, outputs and check results, and the hash of each of its
// instances by ID. Of its objects only those of the few instances whose
// bytes the write changes are read (some), to tell a change from a
// respelling; the version is neither loaded whole nor rendered. The
// body's instances spelled as the store recorded them take their hashes
// from there (graph.ParseOptions.Spelled), so the parse too costs what
// changed, but for one validating scan and one hash of the body.
type coldIndex struct {
	ir     IndexReader
	snap   *Snapshot
	hashes map[string]graph.Hash
	name   string
}

// readColdIndex returns the coldIndex of st's current version, having
// parsed body (without an index to reuse: a full parse), or nil when the
// write must be diffed against the version's index (see
// Engine.currentIs), loading it: on a store that is no IndexReader, on an
// opaque current version or body (whose changes are the whole state), and
// for a body of the current serial, which may be the current document
// byte for byte (a re-POST, which adds nothing): only the document tells.
func (e *Engine) readColdIndex(ctx context.Context, st *State, body []byte, o WriteOptions, p *parsed) (*coldIndex, error) {
	ir, ok := e.store.(IndexReader)
	if !ok || p.done && (p.encrypted || p.err == nil && p.graph.Serial == st.Serial) {
		return nil, nil
	}
	snap, hashes, spelled, err := ir.SnapshotHashes(ctx, st.Name, st.Current)
	if err != nil {
		return nil, err
	}
	if snap.Version.Format == FormatOpaque {
		return nil, nil
	}
	p.parse(body, nil, spelled, o)
	if p.encrypted || p.err == nil && p.graph.Serial == snap.Version.Serial {
		return nil, nil
	}
	return &coldIndex{ir: ir, snap: snap, hashes: hashes, name: st.Name}, nil
}

// some reads the stored instances of ids in the index's version.
func (ci *coldIndex) some(ctx context.Context) func(ids []string) ([]graph.Instance, error) {
	return func(ids []string) ([]graph.Instance, error) {
		return ci.ir.SnapshotSome(ctx, ci.name, ci.snap.Version.Number, ids)
	}
}

// whole loads the index's version whole, objects and all: what merging
// an optimistic write onto it takes.
func (ci *coldIndex) whole(ctx context.Context, s Store) (*graph.State, error) {
	snap, err := s.Snapshot(ctx, ci.name, ci.snap.Version.Number)
	if err != nil {
		return nil, err
	}
	return graphOf(snap)
}

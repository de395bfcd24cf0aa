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
func (e *Engine) streamEntry(ctx context.Context, st *StateInfo, ss SnapshotStreamer) (*cacheEntry, error) {
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

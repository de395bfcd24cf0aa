package kilolock

import (
	"context"

	"github.com/kilolock/kilolock/graph"
)

// The engine's reads of a version beyond a GET's (Engine.Open): what the
// feature packages (history, drift) and embedders build on.

// VersionGraph reads a version of st, the one ref names,, from the cache when it is the
// current one. ErrEncrypted for a client-side encrypted version; see
// ResolveVersion for the other errors.
func (e *Engine) VersionGraph(ctx context.Context, st *State, ref VersionRef) (*Body, *graph.State, error) {
	v, err := e.Resolve(ctx, st, ref)
	if err != nil {
		return nil, nil, err
	}
	var (
		d *Body
		g *graph.State
	)
	if v.Number == st.Current {
		d, g, err = e.load(ctx, st)
	} else {
		var snap *Snapshot
		if snap, err = e.store.Snapshot(ctx, st.Name, v.Number); err == nil {
			d, g, err = e.bodyOf(snap)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if g == nil {
		return d, nil, encryptedError(st.Name)
	}
	return d, g, nil
}

// State validates name and reads the state: what Store.State returns.
func (e *Engine) State(ctx context.Context, name string) (*State, error) {
	if err := ValidStateName(name); err != nil {
		return nil, err
	}
	return e.store.State(ctx, name)
}

// DepGraph returns version ref of a state with its graph's dependency
// index: the current version's cached with it, an older one's built for
// the call.
func (e *Engine) DepGraph(ctx context.Context, name string, ref VersionRef) (*Body, *graph.State, *graph.DepIndex, error) {
	var ent *cacheEntry
	if ref.Kind == RefLatest {
		// One cheap read when the version is cached: no more than a GET.
		var err error
		if ent, err = e.currentEntry(ctx, name); err != nil {
			return nil, nil, nil, err
		}
	} else {
		st, err := e.State(ctx, name)
		if err != nil {
			return nil, nil, nil, err
		}
		v, err := e.Resolve(ctx, st, ref)
		if err != nil {
			return nil, nil, nil, err
		}
		if v.Number == st.Current {
			ent, err = e.loadEntry(ctx, st)
		} else {
			d, g, err := e.VersionGraph(ctx, st, VersionRef{Kind: RefNumber, N: uint64(v.Number)})
			if err != nil {
				return nil, nil, nil, err
			}
			return d, g, graph.NewDepIndex(g), nil
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	g, err := e.fullGraph(ctx, ent)
	if err != nil {
		return nil, nil, nil, err
	}
	if g == nil {
		return nil, nil, nil, encryptedError(name)
	}
	return ent.body, g, e.cache.depIndex(ent, g), nil
}

// Outputs returns the current version of a state as a state document with
// its outputs and no resources: the same lineage, serial and Terraform
// version, and no check results (they name resources). Sensitive outputs
// keep their values, marked sensitive, as terraform_remote_state needs
// them. Its cost is that of the outputs when the version is cached.
// ErrNotFound when the state has no version; ErrEncrypted when it is
// client-side encrypted.
func (e *Engine) Outputs(ctx context.Context, name string) (*Document, error) {
	ent, err := e.currentOf(ctx, name, false)
	if err != nil {
		return nil, err
	}
	index, err := ent.lean()
	if err != nil {
		return nil, err
	}
	if index == nil {
		return nil, encryptedError(name)
	}
	s := index.Slice(nil)
	s.CheckResults = nil
	return &Document{Version: ent.version, Bytes: s.Render(s.Format)}, nil
}

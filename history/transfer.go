package history

import (
	"context"
	"errors"
	"fmt"

	"github.com/kilolock/kilolock"

	"github.com/kilolock/kilolock/graph"
)

// Export returns version ref of a state as a state file that `tofu state
// push` and `terraform state push` accept: for a version that came
// straight from a client the bytes it sent, for one the server made the
// rendering in Terraform's layout. A client-side encrypted version is its
// blob as stored. ErrNotFound when the state does not exist, a
// *VersionNotFoundError when the version does not.
func Export(ctx context.Context, e *kilolock.Engine, name string, ref kilolock.VersionRef) ([]byte, error) {
	st, err := e.State(ctx, name)
	if err != nil {
		return nil, err
	}
	d, _, err := e.VersionGraph(ctx, st, ref)
	if err != nil && !errors.Is(err, kilolock.ErrEncrypted) {
		return nil, err
	}
	return d.Bytes()
}

// ImportOptions describe an import.
type ImportOptions struct {
	Actor string // who imported, recorded on the new version
	// Force imports a state of another lineage over a non-empty one.
	Force bool
}

// Import writes a state file (from another backend, or from Export) as a
// new version with source "import". Into a new or empty state it lands as
// it is, bytes kept. Onto a state with versions it is held to the lineage
// guard: another lineage is a *ConflictError (ReasonLineage) unless Force;
// a serial not above the current one is raised to the current serial + 1
// (the file is then stored as rendered), so that serials keep growing and
// clients holding the old state see that it moved; a client-side
// encrypted file, whose serial the server cannot raise, is held to the
// serial guard instead (below the current serial: a *ConflictError,
// ReasonStaleSerial, unless Force). Refused with a
// *LockedError naming the holder while anyone holds the state; an
// *InvalidError when data is not a state file.
func Import(ctx context.Context, e *kilolock.Engine, name string, data []byte, o ImportOptions) (*kilolock.WriteResult, error) {
	if err := kilolock.ValidStateName(name); err != nil {
		return nil, err
	}
	wo := kilolock.WriteOptions{Actor: o.Actor, Source: kilolock.SourceImport, Force: o.Force}
	st, err := e.Store().State(ctx, name)
	switch {
	case errors.Is(err, kilolock.ErrNotFound):
		return e.Write(ctx, name, data, wo)
	case err != nil:
		return nil, err
	}
	if err := kilolock.RefuseHolders(st); err != nil {
		return nil, err
	}
	var cur *kilolock.Body
	if st.Current != 0 {
		// The bytes of the current version again (demo-warm restoring the
		// same file, a re-import of an export) are answered without
		// parsing them.
		if cur, err = e.Open(ctx, name); err != nil {
			return nil, err
		}
		if cur.Equal(data) {
			return &kilolock.WriteResult{Version: cur.Version, Unchanged: true}, nil
		}
	}
	g, err := graph.Parse(data)
	if errors.Is(err, graph.ErrEncrypted) || (err == nil && st.Current == 0) {
		return e.Write(ctx, name, data, wo)
	}
	if err != nil {
		return nil, kilolock.ParseError(err)
	}
	if st.Lineage != "" && g.Lineage != st.Lineage {
		if !o.Force {
			return nil, &kilolock.ConflictError{
				State:        name,
				Reason:       kilolock.ReasonLineage,
				Message:      fmt.Sprintf("the imported state has lineage %q, state %s has %q", g.Lineage, name, st.Lineage),
				Hint:         "import into a new state, or import with --force to replace the content and lineage (history is kept)",
				LatestSerial: st.Serial,
				Lineage:      st.Lineage,
				GotLineage:   g.Lineage,
			}
		}
	}
	if g.Serial <= st.Serial {
		// The content of the current version again (re-importing an
		// export, in either layout) adds nothing: answer unchanged rather
		// than append an empty version. (cur is set: st.Current is not 0
		// here, or the write above took the file.)
		g.Serial = st.Serial
		if g.Lineage == st.Lineage && (cur.Equal(g.Render(graph.FormatIndent)) || cur.Equal(g.Render(graph.FormatCompact))) {
			return &kilolock.WriteResult{Version: cur.Version, Unchanged: true}, nil
		}
		g.Serial = st.Serial + 1
		data = g.Render(g.Format)
	}
	// The lineage was checked above; Force lets a forced import through the
	// store's lineage guard (never through its lock rules).
	wo.Force = true
	return e.Write(ctx, name, data, wo)
}

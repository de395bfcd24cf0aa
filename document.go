package kilolock

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"

	"github.com/klauspost/compress/gzip"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/delta"
)

// Document is one version of a state as bytes, in memory: what Read and
// ReadVersion return. To serve a version without holding its bytes, Open
// it (see Body).
type Document struct {
	Version Version
	Bytes   []byte
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func gunzipBytes(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// graphOf is the graph of a stored version, in Terraform's order; nil for
// an opaque (client-side encrypted) version.
func graphOf(snap *Snapshot) (*graph.State, error) {
	v := snap.Version
	if v.Format == FormatOpaque {
		return nil, nil
	}
	g := &graph.State{
		Version:          4,
		TerraformVersion: v.TerraformVersion,
		Serial:           v.Serial,
		Lineage:          v.Lineage,
		Outputs:          snap.Outputs,
		Instances:        snap.Instances,
		CheckResults:     snap.CheckResults,
		Format:           graph.ParseFormat(v.Format),
	}
	g.Sort()
	return g, nil
}

// bodyOf is a stored version to serve: its graph, which renders it, or
// the bytes it keeps when rendering does not give them (see keptBytes). The
// graph is nil for an opaque (client-side encrypted) version.
func (e *Engine) bodyOf(snap *Snapshot) (*Body, *graph.State, error) {
	v := snap.Version
	g, err := graphOf(snap)
	if err != nil {
		return nil, nil, err
	}
	if g == nil {
		return gzippedBody(v, nil, snap.Raw, nil), nil, nil
	}
	if snap.Raw == nil {
		return renderedBody(v, g), g, nil
	}
	if !bytes.HasPrefix(snap.Raw, []byte(keptDeltaMagic)) {
		return gzippedBody(v, nil, snap.Raw, nil), g, nil
	}
	// A delta against the rendering: made into the whole document once,
	// and kept compressed.
	b, err := keptDocument(snap.Raw, func() []byte { return g.Render(g.Format) })
	if errors.Is(err, delta.ErrMismatch) {
		// The rendering is not the one the kept delta was made against:
		// only a change to how this program renders state could do that.
		// The rendering means the same as the posted bytes; serve it
		// rather than fail the read, and say so.
		e.log.Error("kept bytes of a version do not apply to its rendering; serving the rendering, which means the same", "state", v.State, "version", v.Number, "err", err)
		return renderedBody(v, g), g, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("version %d of %q: stored bytes: %w", v.Number, v.State, err)
	}
	return gzippedBody(v, nil, gzipBytes(b), b), g, nil
}

// keepRendering makes the body and index of version v, whose graph g
// (the engine's own, not shared) is rendered into the bytes the version
// keeps: a spool file when they are large. Each instance learns its
// fragment as rendered (graph.State.RenderIndexTo), so that the next
// write finds its unchanged instances by their bytes, and g is then made
// lean: it is the version's index.
func (e *Engine) keepRendering(v Version, g *graph.State) (*Body, *graph.State, error) {
	w := &docWriter{dir: e.spoolDir}
	w.h.SetSeed(docSeed)
	_, err := g.RenderIndexTo(w, g.Format)
	if err == nil {
		err = w.err
	}
	if err != nil {
		return nil, nil, fmt.Errorf("version %d of %q: render its bytes: %w", v.Number, v.State, err)
	}
	g.Lean()
	return keptBody(v, w.doc(), w.h.Sum64()), g, nil
}

// docWriter takes a document being written into the bytes a version
// keeps: in memory until it reaches fileMinBytes, then in a spool file (in
// memory still if none can be made); h hashes it as sumOf does.
type docWriter struct {
	dir  string
	mem  []byte
	file *Spool
	n    int64
	h    maphash.Hash
	err  error
}

func (w *docWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	if w.file == nil && int64(len(w.mem)+len(p)) >= fileMinBytes {
		if f, err := newSpool(w.dir); err == nil {
			if _, err := f.Write(w.mem); err != nil {
				f.Close()
			} else {
				w.file, w.mem = f, nil
			}
		}
	}
	if w.file != nil {
		if _, err := w.file.Write(p); err != nil {
			w.err = err
			return 0, err
		}
	} else {
		w.mem = append(w.mem, p...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *docWriter) doc() *docBytes {
	return &docBytes{mem: w.mem, file: w.file, n: w.n, dir: w.dir}
}

// keepDoc returns body as the bytes a version keeps: the Spool it maps
// when the writer gives it (o.Spool), taken over, or body itself when the
// writer gives it away (o.Owned) and it is kept in memory, else a copy, in
// a spool file when large. Not copying a small body saves a write the
// allocation, zeroing and copy of its bytes and the collections they
// bring on: the copy was 4-7% of kld's CPU a cycle in a profile of
// internal/e2e BenchmarkKLDFleet (200 states of 0.4 MB).
func (e *Engine) keepDoc(body []byte, o *WriteOptions) *docBytes {
	if sp := o.Spool; len(body) >= fileMinBytes && sp != nil {
		if fi, err := sp.Stat(); err == nil && fi.Size() == int64(len(body)) && sp.taken.CompareAndSwap(false, true) {
			return &docBytes{file: sp, n: int64(len(body)), dir: e.spoolDir}
		}
	}
	if o.Owned && len(body) < fileMinBytes && cap(body) == len(body) {
		return &docBytes{mem: body, n: int64(len(body)), dir: e.spoolDir}
	}
	w := &docWriter{dir: e.spoolDir}
	if _, err := w.Write(body); err != nil {
		e.log.Warn("keeping a version's bytes in a spool file failed: keeping them in memory", "err", err)
		return &docBytes{mem: bytes.Clone(body), n: int64(len(body)), dir: e.spoolDir}
	}
	return w.doc()
}

// A version that came straight from a POST is served as the bytes posted.
// Its rows usually render back to exactly those bytes, as both CLIs write
// state deterministically, and then nothing more is stored. When they do
// not (a writer with another layout, or objects whose stored bytes are an
// earlier spelling of the same meaning, kept because an equal object costs
// no row), the version keeps the bytes in Commit.Raw, in one of two forms:
//
//   - a delta against the version's own rendering from its rows, when that
//     is small: a CLI's document in which a few objects are spelled as the
//     rows spell them costs about those objects;
//   - else the whole body, gzip-compressed (a document in another layout,
//     such as Python's sorted keys, shares too little with the rendering).
//
// The delta is taken against the rendering of the same version, not the
// previous version's bytes, so reading a version never walks a chain.
const keptDeltaMagic = "KLD\x01" // then the gzip-compressed delta.Make(rendering, body)

// keptBytes returns what a version keeps to serve body when rendering its
// rows gives rendered instead.
func keptBytes(rendered, body []byte) []byte {
	d := delta.Make(rendered, body)
	if len(d) >= len(body)/2 {
		return gzipBytes(body)
	}
	return append([]byte(keptDeltaMagic), gzipBytes(d)...)
}

// keptDocument reads back what keptBytes kept (or, for versions written
// before deltas, and for opaque ones, the whole gzip-compressed body);
// render gives the version's rendering from its rows when a delta needs
// it. An error wrapping delta.ErrMismatch means the rendering is not the
// one the delta was made against.
func keptDocument(raw []byte, render func() []byte) ([]byte, error) {
	if !bytes.HasPrefix(raw, []byte(keptDeltaMagic)) {
		return gunzipBytes(raw)
	}
	d, err := gunzipBytes(raw[len(keptDeltaMagic):])
	if err != nil {
		return nil, err
	}
	return delta.Apply(render(), d)
}

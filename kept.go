package kilolock

import (
	"bytes"

	"github.com/kilolock/kilolock/internal/delta"
)

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

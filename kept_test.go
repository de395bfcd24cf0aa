package kilolock

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/delta"
)

// TestKeptBytes: a body close to its rendering is kept as a small delta, a
// body in another layout as its gzip; both read back exactly, and a delta
// given another rendering is an error, never other bytes.
func TestKeptBytes(t *testing.T) {
	rendered := []byte(strings.Repeat(`{"index_key":1,"schema_version":0,"attributes":{"id":"abcdefghij"}},`, 2000))
	close := bytes.Replace(rendered, []byte(`"id":"abcdefghij"}},{"index_key":1,"schema`), []byte(`"id":"abcdefghij"}},{"schema`), 1)
	other := bytes.ReplaceAll(rendered, []byte(`,"`), []byte(",\n  \""))
	for _, tc := range []struct {
		name  string
		body  []byte
		delta bool
	}{{"close", close, true}, {"other layout", other, false}} {
		t.Run(tc.name, func(t *testing.T) {
			raw := keptBytes(rendered, tc.body)
			if got := bytes.HasPrefix(raw, []byte(keptDeltaMagic)); got != tc.delta {
				t.Fatalf("kept as a delta: %v, want %v (%d bytes)", got, tc.delta, len(raw))
			}
			if tc.delta && len(raw) > 200 {
				t.Errorf("a delta of %d bytes for one edit", len(raw))
			}
			got, err := keptDocument(raw, func() []byte { return rendered })
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("read back %d bytes (%v), want the %d kept", len(got), err, len(tc.body))
			}
		})
	}
	raw := keptBytes(rendered, close)
	if _, err := keptDocument(raw, func() []byte { return other }); !errors.Is(err, delta.ErrMismatch) {
		t.Fatalf("a delta read against another rendering: %v, want ErrMismatch", err)
	}
}

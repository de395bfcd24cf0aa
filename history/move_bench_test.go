package history_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/testpg"
	"github.com/kilolock/kilolock/store"
)

// BenchmarkMove1000of10000 moves terraform_data.moved (1,000 instances of
// about 1 KB) out of a state of 10,000 into another and back, one move an
// op, through the library (history.Move over Engine.CommitTogether), on each store.
// Beside the time it reports the rows each move writes: O(moved), not
// O(state).
func BenchmarkMove1000of10000(b *testing.B) {
	for _, s := range []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "kl.db") }},
		{"postgres", func(b *testing.B) string { return testpg.URL(b) }},
	} {
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(ctx, s.url(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			e := kilolock.NewEngine(st, kilolock.Options{Logger: log.New(io.Discard)})
			keys := func(n int) []int {
				k := make([]int, n)
				for i := range k {
					k[i] = i
				}
				return k
			}
			pad := strings.Repeat("abcdefghij", 90)
			write(b, e, "src", doc(b, 1, lineageA, nil,
				res{typ: "terraform_data", name: "moved", keys: keys(1000), pad: pad},
				res{typ: "terraform_data", name: "stay", keys: keys(9000), pad: pad}))
			write(b, e, "dst", doc(b, 1, lineageB, nil, res{typ: "terraform_data", name: "other"}))
			from, to := "src", "dst"
			var rows int
			for b.Loop() {
				r, err := history.Move(ctx, e, from, to, []history.MovePair{{From: "terraform_data.moved"}}, history.MoveOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Moved) != 1000 {
					b.Fatalf("moved %d", len(r.Moved))
				}
				rows = r.Stats.Rows
				from, to = to, from
			}
			b.ReportMetric(float64(rows), "rows/op")
		})
	}
}

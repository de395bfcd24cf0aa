package kilolock_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// TestWriteReleasesTheBody: Write hands the body back (WriteOptions.Release)
// before the store commits, and never reads it again: the caller scribbles
// over it there, and the version still holds, serves and recognizes the
// bytes that were posted. When another replica commits first, the write is
// recomputed from what it parsed, with the same result. A body that
// rendering the version does not give back is kept, not released.
func TestWriteReleasesTheBody(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, kind string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			doc := graphtest.Generate(300, 256, graph.FormatIndent)
			series, err := graphtest.NewSeries(doc)
			if err != nil {
				t.Fatal(err)
			}

			// write posts want through e with a Release that checks the
			// store has not committed yet, runs during (a replica's
			// commit, say) and then scribbles over the body.
			write := func(t *testing.T, want []byte, during func()) (*kilolock.WriteResult, int) {
				t.Helper()
				before := current(t, st)
				body := bytes.Clone(want)
				released := 0
				res, err := e.Write(ctx, "s", body, kilolock.WriteOptions{Release: func() {
					released++
					if now := current(t, st); now != before {
						t.Errorf("released after the commit: current version %d, was %d", now, before)
					}
					if during != nil {
						during()
					}
					for i := range body {
						body[i] = 'x'
					}
				}})
				if err != nil {
					t.Fatalf("Write: %v", err)
				}
				return res, released
			}
			check := func(t *testing.T, want []byte, version int64) {
				t.Helper()
				got, err := e.Read(ctx, "s")
				if err != nil || !bytes.Equal(got.Bytes, want) || got.Version.Number != version {
					t.Fatalf("Read: version %d, %d bytes (%v); want version %d, the %d posted", got.Version.Number, len(got.Bytes), err, version, len(want))
				}
				// A re-POST of the same bytes is recognized as such.
				res, err := e.Write(ctx, "s", bytes.Clone(want), kilolock.WriteOptions{})
				if err != nil || !res.Unchanged {
					t.Fatalf("re-POST of the current bytes: %+v, %v; want unchanged", res, err)
				}
			}

			t.Run("first version", func(t *testing.T) {
				res, released := write(t, doc, nil)
				if released != 1 {
					t.Errorf("released %d times, want 1", released)
				}
				check(t, doc, res.Version.Number)
			})
			t.Run("next version", func(t *testing.T) {
				next := series.Next()
				res, released := write(t, next, nil)
				if released != 1 || res.Version.Added+res.Version.Changed != 2 {
					t.Errorf("released %d times, %d added and %d changed; want 1, and 2 changed", released, res.Version.Added, res.Version.Changed)
				}
				check(t, next, res.Version.Number)
			})
			t.Run("another replica commits first", func(t *testing.T) {
				replica := kilolock.NewEngine(st, kilolock.Options{})
				theirs, ours := series.Next(), series.Next()
				res, released := write(t, ours, func() {
					if _, err := replica.Write(ctx, "s", bytes.Clone(theirs), kilolock.WriteOptions{}); err != nil {
						t.Errorf("the replica's write: %v", err)
					}
				})
				if released != 1 {
					t.Errorf("released %d times, want 1", released)
				}
				check(t, ours, res.Version.Number)
				if n := current(t, st); n != res.Version.Number || res.Version.Number < 2 {
					t.Errorf("the store's current version is %d, the write's %d", n, res.Version.Number)
				}
			})
			t.Run("bytes no rendering gives are kept", func(t *testing.T) {
				respelled := bytes.Replace(series.Next(), []byte("\n  \"lineage\""), []byte("\n    \"lineage\""), 1)
				res, released := write(t, respelled, nil)
				if released != 0 {
					t.Errorf("released %d times a body the version keeps bytes of", released)
				}
				check(t, respelled, res.Version.Number)
			})
		})
	})
}

// TestWriteKeepsAnOwnedBody: a body the writer gives away
// (WriteOptions.Owned) is kept as the version's bytes as it is, not
// copied; one it does not give, or whose memory goes on past its end, is
// copied. Either way the version holds and serves the bytes posted, also
// when another replica commits first and the write is recomputed from
// what it kept.
func TestWriteKeepsAnOwnedBody(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, kind string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			series, err := graphtest.NewSeries(graphtest.Generate(200, 256, graph.FormatIndent))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name        string
				owned, room bool
				replica     bool
				kept        bool
			}{
				{name: "first version, owned", owned: true, kept: true},
				{name: "owned", owned: true, kept: true},
				{name: "not owned"},
				{name: "owned, with room past its end", owned: true, room: true},
				{name: "owned, another replica commits first", owned: true, replica: true, kept: true},
			} {
				t.Run(c.name, func(t *testing.T) {
					want := series.Next()
					body := exactly(want)
					if c.room {
						body = append(make([]byte, 0, len(want)+100), want...)
					}
					o := kilolock.WriteOptions{Owned: c.owned}
					if c.replica {
						theirs := series.Next()
						want = series.Next()
						body = exactly(want)
						replica := kilolock.NewEngine(st, kilolock.Options{})
						o.Release = func() {
							if _, err := replica.Write(ctx, "s", bytes.Clone(theirs), kilolock.WriteOptions{}); err != nil {
								t.Errorf("the replica's write: %v", err)
							}
						}
					}
					res, err := e.Write(ctx, "s", body, o)
					if err != nil {
						t.Fatalf("Write: %v", err)
					}
					kept := kilolock.KeptDocument(e, "s")
					if len(kept) != len(want) {
						t.Fatalf("the cache keeps %d bytes in memory, want the %d posted", len(kept), len(want))
					}
					if same := &kept[0] == &body[0]; same != c.kept {
						t.Errorf("kept the body itself: %v, want %v", same, c.kept)
					}
					got, err := e.Read(ctx, "s")
					if err != nil || !bytes.Equal(got.Bytes, want) || got.Version.Number != res.Version.Number {
						t.Fatalf("Read: version %d, %d bytes (%v); want version %d, the %d posted", got.Version.Number, len(got.Bytes), err, res.Version.Number, len(want))
					}
					fresh, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, "s")
					if err != nil || !bytes.Equal(fresh.Bytes, want) {
						t.Fatalf("Read by another engine: %d bytes (%v), want the %d posted", len(fresh.Bytes), err, len(want))
					}
				})
			}
		})
	})
}

// exactly is a copy of b whose capacity is its length, as the HTTP
// handler reads a body of announced length (bytes.Clone may round it up).
func exactly(b []byte) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// current is the number of the current version of state "s" (0 before
// its first).
func current(tb testing.TB, st kilolock.Store) int64 {
	tb.Helper()
	info, err := st.State(context.Background(), "s")
	if err != nil {
		return 0
	}
	return info.Current
}

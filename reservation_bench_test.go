package kilolock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/internal/enginetest"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/reserve"
)

// writeReservations returns write reservations on n instances of s, from
// instance from on.
func writeReservations(tb testing.TB, s *graph.State, from, n int) []kilolock.Reservation {
	return reservationsOn(tb, s, from, n, reserve.Write)
}

func reservationsOn(tb testing.TB, s *graph.State, from, n int, m reserve.Mode) []kilolock.Reservation {
	tb.Helper()
	out := make([]kilolock.Reservation, 0, n)
	for i := from; i < from+n; i++ {
		p, err := reserve.Parse(s.Instances[i].Address())
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, kilolock.Reservation{Pattern: p, Mode: m})
	}
	return out
}

// BenchmarkReserve is the cost of an orchestrated apply taking its
// reservations on a 10,000-instance state: StartRun and AcquireRun of 1,
// 100 and 10,000 reservations, one per instance (the run is ended between
// iterations, outside the timer), beside another run holding 100 that
// each acquisition is checked against. Reads, so that 10,000 fit beside
// the other run's; a write costs the same.
func BenchmarkReserve(b *testing.B) {
	doc := graphtest.Generate(10000, 200, graph.FormatCompact)
	s, err := graph.Parse(doc)
	if err != nil {
		b.Fatal(err)
	}
	enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
		ctx := context.Background()
		e := kilolock.NewEngine(open(b), kilolock.Options{})
		if _, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		other, err := applyrun.StartRun(ctx, e, "big", kilolock.RunRequest{Actor: "other", Reservations: reservationsOn(b, s, 0, 100, reserve.Read)})
		if err != nil {
			b.Fatal(err)
		}
		if _, bs, err := applyrun.AcquireRun(ctx, e, other.ID); err != nil || len(bs) > 0 {
			b.Fatal(err, bs)
		}
		ok := true
		for _, n := range []int{1, 100, 10000} {
			res := reservationsOn(b, s, 0, n, reserve.Read)
			ok = ok && b.Run(fmt.Sprintf("%s/reservations=%d", store, n), func(b *testing.B) {
				for b.Loop() {
					run, err := applyrun.StartRun(ctx, e, "big", kilolock.RunRequest{Actor: "bench", Reservations: res, Lease: time.Minute})
					if err != nil {
						b.Fatal(err)
					}
					if _, bs, err := applyrun.AcquireRun(ctx, e, run.ID); err != nil || len(bs) > 0 {
						b.Fatal(err, bs)
					}
					b.StopTimer()
					if _, err := applyrun.EndRun(ctx, e, run.ID, kilolock.RunEnd{Status: kilolock.RunSucceeded}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
		return ok
	})
}

// BenchmarkPostBesideRuns is what reservations add to a plain POST that
// changes 2 of 10,000 instances: with no run on the state, and beside an
// active run holding 100 write reservations elsewhere (the commit then
// looks up what covers its 2 changes). The difference of the two is the
// reservation check.
func BenchmarkPostBesideRuns(b *testing.B) {
	doc := graphtest.Generate(10000, 200, graph.FormatCompact)
	s, err := graph.Parse(doc)
	if err != nil {
		b.Fatal(err)
	}
	enginetest.EachStore(b, func(b *testing.B, store string, open func(testing.TB) kilolock.Store) bool {
		ok := true
		for _, withRun := range []bool{false, true} {
			ok = ok && b.Run(fmt.Sprintf("%s/run=%v", store, withRun), func(b *testing.B) {
				ctx := context.Background()
				e := kilolock.NewEngine(open(b), kilolock.Options{})
				if _, err := e.Write(ctx, "big", doc, kilolock.WriteOptions{}); err != nil {
					b.Fatal(err)
				}
				if withRun {
					run, err := applyrun.StartRun(ctx, e, "big", kilolock.RunRequest{Actor: "other", Reservations: writeReservations(b, s, 9000, 100), Lease: time.Hour})
					if err != nil {
						b.Fatal(err)
					}
					if _, bs, err := applyrun.AcquireRun(ctx, e, run.ID); err != nil || len(bs) > 0 {
						b.Fatal(err, bs)
					}
				}
				cur := doc
				i := 0
				for b.Loop() {
					b.StopTimer()
					cur = graphtest.Change(cur, []int{i % 8000, (i + 4000) % 8000}, graph.FormatCompact)
					i++
					b.StartTimer()
					if _, err := e.Write(ctx, "big", cur, kilolock.WriteOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		return ok
	})
}

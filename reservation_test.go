package kilolock_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/reserve"
)

// TestRunsNarrowAnExclusiveState: on an exclusive state two apply runs
// with disjoint reservations both lock and commit from the same base (the
// second is merged onto the first), a plain write touching a reservation
// is refused and kept for kl conflicts, and the state holds both runs'
// changes.
func TestRunsNarrowAnExclusiveState(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, kind string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(open(t), kilolock.Options{})
			base := modelState{"a": "v1", "b": "v1", "c": "v1"}
			if _, err := e.Write(ctx, "s", modelDoc(1, base), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			start := func(addr string) *kilolock.ApplyRun {
				t.Helper()
				run, err := applyrun.Reserve(ctx, e, "s", kilolock.RunRequest{Actor: addr + "@ci", Lease: time.Minute,
					Reservations: []kilolock.Reservation{{Pattern: reserve.MustParse("terraform_data." + addr), Mode: reserve.Write}}}, reserve.WaitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := applyrun.LockRun(ctx, e, "s", run.ID, kilolock.LockInfo{ID: "lock-" + addr, Operation: "OperationTypeApply", Who: addr + "@ci"}); err != nil {
					t.Fatalf("run %s's lock: %v", addr, err)
				}
				return run
			}
			runA, runB := start("a"), start("b")
			for _, k := range []string{"a", "b"} {
				next := maps.Clone(base)
				next[k] = "v2"
				if _, err := e.Write(ctx, "s", modelDoc(2, next), kilolock.WriteOptions{LockID: "lock-" + k}); err != nil {
					t.Fatalf("run %s's write from the shared base: %v", k, err)
				}
			}
			// A lock-less write to a reserved address is refused, and kept.
			next := modelState{"a": "plain", "b": "v2", "c": "v1"}
			_, err := e.Write(ctx, "s", modelDoc(5, next), kilolock.WriteOptions{Actor: "plain"})
			var ce *kilolock.ConflictError
			if !errors.As(err, &ce) || ce.Reason != kilolock.ReasonReserved || len(ce.Addresses) != 1 || ce.Addresses[0] != "terraform_data.a" {
				t.Fatalf("a plain write to a reserved address = %v", err)
			}
			rs, err := history.Rejections(ctx, e, "s", 10)
			if err != nil || len(rs) != 1 || rs[0].Reason != kilolock.ReasonReserved {
				t.Errorf("rejections = %+v, %v; want the reserved refusal", rs, err)
			}
			for _, r := range []*kilolock.ApplyRun{runA, runB} {
				if _, err := applyrun.EndRun(ctx, e, r.ID, kilolock.RunEnd{Status: kilolock.RunSucceeded}); err != nil {
					t.Fatal(err)
				}
			}
			g, _, err := e.Graph(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := stateOf(g), (modelState{"a": "v2", "b": "v2", "c": "v1"}); !maps.Equal(got, want) {
				t.Errorf("state %v, want %v", got, want)
			}
			h, _ := e.History(ctx, "s", kilolock.HistoryOptions{Limit: 1})
			if h[0].Source != kilolock.SourceApply || !h[0].Merged {
				t.Errorf("the second run's write is a %s (merged %v), want an apply merged onto the first", h[0].Source, h[0].Merged)
			}
		})
	})
}

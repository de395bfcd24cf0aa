package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/quota"
	"github.com/kilolock/kilolock/tenancy"
)

// testMove: a move between states writes a version of each or neither,
// each history naming the other; refusals change nothing; a split makes
// the target in the source's lock mode with its quota; a merge archives
// the source; rows written grow with what moves, not with the states.
func testMove(t *testing.T, open Opener) {
	s := open(t)
	ms, ok := s.(history.MoveStore)
	if !ok {
		t.Skip("the store does not implement history.MoveStore")
	}
	ctx := context.Background()
	web := resource("aws_instance", "web")
	db := resource("aws_db_instance", "main")

	// seed makes state name with n web instances and one db instance.
	seed := func(t *testing.T, name string, n int) {
		t.Helper()
		c := next(t, s, name)
		for i := range n {
			c.Upserts = append(c.Upserts, instance(t, web, intKey(int64(i)), fmt.Sprintf(`{"id":"i-%d"}`, i)))
		}
		c.Upserts = append(c.Upserts, instance(t, db, graph.IndexKey{}, `{"id":"db"}`))
		commit(t, s, name, c)
	}
	// move builds the move of web[0..k) from one state to another.
	move := func(t *testing.T, from, to string, k int, create bool) *history.MoveCommit {
		t.Helper()
		m := &history.MoveCommit{From: from, To: to, FromCommit: next(t, s, from), ToCommit: next(t, s, to), Create: create}
		m.FromCommit.Version.Source, m.ToCommit.Version.Source = kilolock.SourceMove, kilolock.SourceMove
		for i := range k {
			in := instance(t, web, intKey(int64(i)), fmt.Sprintf(`{"id":"i-%d"}`, i))
			m.FromCommit.Removed = append(m.FromCommit.Removed, in.ID())
			m.ToCommit.Upserts = append(m.ToCommit.Upserts, in)
			m.Moved = append(m.Moved, in.ID())
		}
		return m
	}
	ids := func(t *testing.T, name string) map[string]bool {
		t.Helper()
		st := state(t, s, name)
		snap, err := s.Snapshot(ctx, name, st.Current)
		must(t, err)
		out := map[string]bool{}
		for _, in := range snap.Instances {
			out[in.ID()] = true
		}
		return out
	}

	t.Run("both versions, each naming the other", func(t *testing.T) {
		seed(t, "move-a", 3)
		seed(t, "move-b", 0)
		m := move(t, "move-a", "move-b", 2, false)
		m.ToCommit.Removed = nil
		// b's db stays; b gets web[0], web[1].
		vf, vt, stats, err := ms.Move(ctx, m)
		must(t, err)
		if vf.Number != 2 || vt.Number != 2 || vf.Source != kilolock.SourceMove || vt.Source != kilolock.SourceMove || vf.Removed != 2 || vt.Added != 2 {
			t.Errorf("versions = %+v, %+v", vf, vt)
		}
		if a, b := ids(t, "move-a"), ids(t, "move-b"); len(a) != 2 || len(b) != 3 || !a["aws_instance.web[2]"] || !b["aws_instance.web[0]"] || a["aws_instance.web[0]"] {
			t.Errorf("after the move a holds %v, b holds %v", a, b)
		}
		// Two versions, two states rows, 2 closed, 2 opened, 2 payloads,
		// the move's row.
		if stats.Rows != 11 {
			t.Errorf("rows written = %d, want 11", stats.Rows)
		}
		for _, name := range []string{"move-a", "move-b"} {
			rs, err := ms.Moves(ctx, name)
			must(t, err)
			if len(rs) != 1 || rs[0].From != "move-a" || rs[0].FromVersion != 2 || rs[0].To != "move-b" || rs[0].ToVersion != 2 || rs[0].Instances != 2 {
				t.Errorf("Moves(%s) = %+v", name, rs)
			}
		}
		// And back: opposite moves lock in the same order.
		_, _, _, err = ms.Move(ctx, move(t, "move-b", "move-a", 2, false))
		must(t, err)
		if a := ids(t, "move-a"); len(a) != 4 {
			t.Errorf("after the move back a holds %v", a)
		}
	})

	refused := func(t *testing.T, m *history.MoveCommit, code string) *history.MoveError {
		t.Helper()
		fa, fb := freeze(t, s, m.From), freeze(t, s, m.To)
		_, _, _, err := ms.Move(ctx, m)
		e := errorAs[*history.MoveError](t, err)
		if e.Code != code {
			t.Errorf("code = %s (%v), want %s", e.Code, err, code)
		}
		if e.Hint == "" || e.Message == "" {
			t.Errorf("refusal without a message or hint: %+v", e)
		}
		fa.unchanged(t, s, m.From)
		fb.unchanged(t, s, m.To)
		return e
	}

	t.Run("refused while either side is locked", func(t *testing.T) {
		seed(t, "lock-a", 2)
		seed(t, "lock-b", 0)
		lock(t, s, "lock-b", "apply-b", kilolock.LockExclusive)
		e := refused(t, move(t, "lock-a", "lock-b", 1, false), history.MoveLocked)
		if l := errorAs[*kilolock.LockedError](t, e); l.Holder.ID != "apply-b" || e.State != "lock-b" {
			t.Errorf("holder = %+v on %s", l.Holder, e.State)
		}
		// A plan's read lock is no writer's: the move goes on.
		seed(t, "plan-a", 2)
		seed(t, "plan-b", 0)
		if _, err := s.Lock(ctx, "plan-a", kilolock.LockInfo{ID: "plan", Operation: kilolock.OperationPlan, Who: "p"}, kilolock.LockOptions{SharedPlans: true}); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := ms.Move(ctx, move(t, "plan-a", "plan-b", 1, false))
		must(t, err)
	})

	t.Run("refused while an apply run reserves what moves", func(t *testing.T) {
		rs, ok := s.(kilolock.RunStore)
		if !ok {
			t.Skip("no apply runs")
		}
		seed(t, "run-a", 3)
		seed(t, "run-b", 0)
		now := time.Now()
		run := newRun(t, rs, "run-a", "alice", now, "aws_instance.web[1]", "write")
		if _, bs, err := rs.AcquireRun(ctx, run.ID, now); err != nil || len(bs) != 0 {
			t.Fatalf("AcquireRun = %v, %v", bs, err)
		}
		refused(t, move(t, "run-a", "run-b", 2, false), history.MoveReserved)
		// What it does not reserve moves.
		m := move(t, "run-a", "run-b", 1, false)
		_, _, _, err := ms.Move(ctx, m)
		must(t, err)
	})

	t.Run("refused when a side moved on since the move was computed", func(t *testing.T) {
		seed(t, "taken-a", 2)
		seed(t, "taken-b", 1)
		m := move(t, "taken-a", "taken-b", 1, false)
		m.ToCommit.Parent = 0
		fa := freeze(t, s, "taken-a")
		if _, _, _, err := ms.Move(ctx, m); !errors.Is(err, kilolock.ErrStale) {
			t.Errorf("stale parent: %v", err)
		}
		fa.unchanged(t, s, "taken-a")
	})

	t.Run("refused when either side is client-side encrypted", func(t *testing.T) {
		seed(t, "enc-a", 2)
		c := next(t, s, "enc-b")
		c.Version.Format = kilolock.FormatOpaque
		c.Raw = []byte(`{"serial":1,"lineage":"` + lineage + `","meta":{},"encrypted_data":"AAAA","encryption_version":"v0"}`)
		commit(t, s, "enc-b", c)
		refused(t, move(t, "enc-a", "enc-b", 1, false), history.MoveEncrypted)
	})

	t.Run("a split makes the target as the source is", func(t *testing.T) {
		seed(t, "split-a", 3)
		must(t, s.SetLockMode(ctx, "split-a", kilolock.LockOptimistic))
		if qs, ok := s.(kilolock.QuotaStore); ok {
			must(t, qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "split-a"}, &quota.Limit{Soft: 5, Hard: 10}))
		}
		m := move(t, "split-a", "split-new", 2, true)
		m.ToCommit.Version.Lineage = "0b5e3c2a-1111-4222-8333-444455556666"
		_, vt, _, err := ms.Move(ctx, m)
		must(t, err)
		st := state(t, s, "split-new")
		if st.LockMode != kilolock.LockOptimistic || st.Lineage != m.ToCommit.Version.Lineage || vt.Number != 1 || vt.Instances != 2 {
			t.Errorf("split target = %+v, version %+v", st, vt)
		}
		if qs, ok := s.(kilolock.QuotaStore); ok {
			qq, err := qs.Quotas(ctx)
			must(t, err)
			found := false
			for _, q := range qq {
				found = found || q.Target == "split-new" && q.Limit.Hard == 10
			}
			if !found {
				t.Errorf("the split's target has no copy of the source's quota: %+v", qq)
			}
		}
		refused(t, move(t, "split-a", "split-new", 1, true), history.MoveStateExists)
	})

	t.Run("quota and lifecycle", func(t *testing.T) {
		qs, ok := s.(kilolock.QuotaStore)
		ts, ok2 := s.(tenancy.TenantStore)
		if !ok || !ok2 {
			t.Skip("no quotas or tenancy")
		}
		seed(t, "quota-a", 3)
		seed(t, "quota-b", 0)
		must(t, qs.SetQuota(ctx, kilolock.QuotaTarget{Scope: kilolock.QuotaState, Target: "quota-b"}, &quota.Limit{Soft: 1, Hard: 2}))
		e := refused(t, move(t, "quota-a", "quota-b", 2, false), history.MoveQuotaExceeded)
		if !e.Forbidden || !errors.Is(e, kilolock.ErrQuotaExceeded) {
			t.Errorf("quota refusal = %+v", e)
		}
		// Exactly the hard limit is allowed.
		_, _, _, err := ms.Move(ctx, move(t, "quota-a", "quota-b", 1, false))
		must(t, err)

		must(t, ts.SetStateLifecycle(ctx, "quota-a", tenancy.LifecycleArchived))
		m := move(t, "quota-a", "quota-b", 0, false)
		m.FromCommit.Removed = []string{"aws_instance.web[2]"}
		refused(t, m, history.MoveSourceArchived)
	})

	t.Run("a merge archives the source", func(t *testing.T) {
		ts, ok := s.(tenancy.TenantStore)
		if !ok {
			t.Skip("no lifecycles")
		}
		seed(t, "merge-a", 2)
		seed(t, "merge-b", 0)
		m := move(t, "merge-a", "merge-b", 2, false)
		m.ArchiveFrom = true
		_, _, _, err := ms.Move(ctx, m)
		must(t, err)
		if l, err := ts.StateLifecycle(ctx, "merge-a"); err != nil || l != tenancy.LifecycleArchived {
			t.Errorf("source lifecycle = %s, %v", l, err)
		}
	})

	t.Run("rows written grow with what moves", func(t *testing.T) {
		seed(t, "rows-a", 300)
		seed(t, "rows-b", 0)
		_, _, small, err := ms.Move(ctx, move(t, "rows-a", "rows-b", 3, false))
		must(t, err)
		if small.Rows != 2+2+3+3+3+1 {
			t.Errorf("moving 3 of 301 wrote %d rows, want 14", small.Rows)
		}
	})
}

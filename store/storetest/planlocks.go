package storetest

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
)

// testPlanLockLimit: EndPlanLocks ends the plans' locks taken before the
// cutoff on every state, shared ones and plans' exclusive ones where
// plans do not share, and nothing else: not a writer's lock, not a plan's
// lock taken after the cutoff.
func testPlanLockLimit(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	shared := kilolock.LockOptions{SharedPlans: true}
	plan := func(id string) kilolock.LockInfo {
		li := lockInfo(id, "planner-"+id)
		li.Operation = kilolock.OperationPlan
		return li
	}
	mustLock := func(name string, info kilolock.LockInfo, o kilolock.LockOptions) *kilolock.Lock {
		t.Helper()
		l, err := s.Lock(ctx, name, info, o)
		if err != nil {
			t.Fatalf("Lock(%s, %s): %v", name, info.ID, err)
		}
		return l
	}
	w := mustLock("s", lockInfo("w", "alice"), shared)
	p1 := mustLock("s", plan("p1"), shared)
	pc := mustLock("classic", plan("pc"), kilolock.LockOptions{}) // plans do not share here: exclusive
	if !p1.Shared || pc.Shared {
		t.Fatalf("p1 shared %v, pc shared %v; want a shared and an exclusive plan's lock", p1.Shared, pc.Shared)
	}
	time.Sleep(10 * time.Millisecond)
	p2 := mustLock("s", plan("p2"), shared)

	none, err := s.EndPlanLocks(ctx, w.Acquired.Add(-time.Hour))
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("EndPlanLocks before every lock = %+v, %v; want an empty list", none, err)
	}
	ended, err := s.EndPlanLocks(ctx, p2.Acquired)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].State < ended[j].State })
	if len(ended) != 2 || ended[0].State != "classic" || ended[0].Lock.Info != pc.Info || ended[1].State != "s" || ended[1].Lock.Info != p1.Info ||
		!ended[1].Lock.Shared || !ended[1].Lock.Acquired.Equal(p1.Acquired) {
		t.Fatalf("EndPlanLocks = %+v; want p1 on s and pc on classic", ended)
	}
	if got := state(t, s, "s").Locks; len(got) != 2 || got[0].Info.ID != "w" || got[1].Info.ID != "p2" {
		t.Errorf("locks left on s: %+v, want the writer w and the newer plan p2", got)
	}
	if got := state(t, s, "classic").Locks; len(got) != 0 {
		t.Errorf("locks left on classic: %+v, want none", got)
	}
	// The state the classic plan held is free for a writer.
	mustLock("classic", lockInfo("w2", "bob"), kilolock.LockOptions{})
	// The ended lock's holder finds it gone.
	if _, err := s.Unlock(ctx, "s", "p1", kilolock.UnlockOptions{}); err == nil {
		t.Errorf("unlocking the ended p1 succeeded")
	}
	if again, err := s.EndPlanLocks(ctx, p2.Acquired); err != nil || len(again) != 0 {
		t.Errorf("EndPlanLocks again = %+v, %v; want nothing", again, err)
	}
}

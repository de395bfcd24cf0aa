package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
)

func testLock(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()

	// lockIDs returns the ids of the holders of name, in order.
	lockIDs := func(t *testing.T, name string) []string {
		t.Helper()
		ids := []string{}
		for _, l := range state(t, s, name).Locks {
			ids = append(ids, l.Info.ID)
		}
		return ids
	}

	tests := []struct {
		name string
		run  func(t *testing.T, name string)
	}{
		{"exclusive admits one holder", func(t *testing.T, name string) {
			a := lock(t, s, name, "a", kilolock.LockExclusive)
			if diff := cmp.Diff(lockInfo("a", "a"), a.Info); diff != "" {
				t.Errorf("Lock returned info (-want +got):\n%s", diff)
			}
			_, err := s.Lock(ctx, name, lockInfo("b", "b"), kilolock.LockOptions{Mode: kilolock.LockExclusive})
			errorIs(t, err, kilolock.ErrLocked)
			e := errorAs[*kilolock.LockedError](t, err)
			if diff := cmp.Diff(lockInfo("a", "a"), e.Holder); diff != "" {
				t.Errorf("LockedError.Holder (-want +got):\n%s", diff)
			}
			if e.State != name {
				t.Errorf("LockedError.State = %q, want %q", e.State, name)
			}
			st := state(t, s, name)
			if diff := cmp.Diff([]kilolock.Lock{*a}, st.Locks); diff != "" {
				t.Errorf("State().Locks (-want +got):\n%s", diff)
			}
		}},
		{"lock of a new state creates it in mode", func(t *testing.T, name string) {
			l := lock(t, s, name, "a", kilolock.LockOptimistic)
			if l.BaseVersion != 0 || l.BaseSerial != 0 {
				t.Errorf("lock base = %d/%d, want 0/0", l.BaseVersion, l.BaseSerial)
			}
			st := state(t, s, name)
			if st.Name != name || st.LockMode != kilolock.LockOptimistic || st.Current != 0 || st.CurrentID != 0 || st.Serial != 0 {
				t.Errorf("new state = %+v", st)
			}
			if st.Created.IsZero() {
				t.Error("new state has no Created time")
			}
		}},
		{"lock of an existing state keeps its mode", func(t *testing.T, name string) {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			lock(t, s, name, "a", kilolock.LockExclusive)
			lock(t, s, name, "b", kilolock.LockExclusive)
			if got := state(t, s, name).LockMode; got != kilolock.LockOptimistic {
				t.Errorf("mode = %q, want optimistic", got)
			}
		}},
		{"same lock id is refused", func(t *testing.T, name string) {
			for _, mode := range []kilolock.LockMode{kilolock.LockExclusive, kilolock.LockOptimistic} {
				if err := s.SetLockMode(ctx, name, mode); err != nil {
					t.Fatal(err)
				}
				lock(t, s, name, "a-"+string(mode), mode)
				_, err := s.Lock(ctx, name, lockInfo("a-"+string(mode), "other"), kilolock.LockOptions{Mode: mode})
				e := errorAs[*kilolock.LockedError](t, err)
				if e.Holder.ID != "a-"+string(mode) || e.Holder.Who != "a-"+string(mode)+"@host" {
					t.Errorf("%s: holder = %+v", mode, e.Holder)
				}
				if _, err := s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true}); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"optimistic admits many holders", func(t *testing.T, name string) {
			commit(t, s, name, next(t, s, name))
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"a", "b", "c"} {
				l := lock(t, s, name, id, kilolock.LockOptimistic)
				if l.BaseVersion != 1 || l.BaseSerial != 1 {
					t.Errorf("lock %s base = %d/%d, want 1/1", id, l.BaseVersion, l.BaseSerial)
				}
			}
			if diff := cmp.Diff([]string{"a", "b", "c"}, lockIDs(t, name)); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		}},
		{"optimistic holders are capped", func(t *testing.T, name string) {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			capped := kilolock.LockOptions{Mode: kilolock.LockOptimistic, MaxHolders: 3}
			for _, id := range []string{"a", "b", "c"} {
				if _, err := s.Lock(ctx, name, lockInfo(id, id), capped); err != nil {
					t.Fatalf("lock %s: %v", id, err)
				}
			}
			before := freeze(t, s, name)
			_, err := s.Lock(ctx, name, lockInfo("d", "d"), capped)
			errorIs(t, err, kilolock.ErrLocked)
			if e := errorAs[*kilolock.LockedError](t, err); e.MaxHolders != 3 || e.Holder.ID != "a" {
				t.Errorf("LockedError = %+v, want MaxHolders 3 naming the first holder", e)
			}
			before.unchanged(t, s, name)
			if _, err := s.Unlock(ctx, name, "b", kilolock.UnlockOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Lock(ctx, name, lockInfo("d", "d"), capped); err != nil {
				t.Errorf("lock d once b left: %v", err)
			}
			if diff := cmp.Diff([]string{"a", "c", "d"}, lockIDs(t, name)); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		}},
		{"the default cap holds", func(t *testing.T, name string) {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			for i := range kilolock.DefaultMaxLockHolders {
				lock(t, s, name, fmt.Sprint("h", i), kilolock.LockOptimistic)
			}
			_, err := s.Lock(ctx, name, lockInfo("one-more", "x"), kilolock.LockOptions{})
			if e := errorAs[*kilolock.LockedError](t, err); e.MaxHolders != kilolock.DefaultMaxLockHolders {
				t.Errorf("LockedError = %+v, want MaxHolders %d", e, kilolock.DefaultMaxLockHolders)
			}
			if _, err := s.Lock(ctx, name, lockInfo("one-more", "x"), kilolock.LockOptions{MaxHolders: -1}); err != nil {
				t.Errorf("no cap: %v", err)
			}
		}},
		{"unlock releases the lock", func(t *testing.T, name string) {
			a := lock(t, s, name, "a", kilolock.LockExclusive)
			got, err := s.Unlock(ctx, name, "a", kilolock.UnlockOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]kilolock.Lock{*a}, got); diff != "" {
				t.Errorf("Unlock returned (-want +got):\n%s", diff)
			}
			if ids := lockIDs(t, name); len(ids) != 0 {
				t.Errorf("holders after unlock = %v", ids)
			}
			lock(t, s, name, "b", kilolock.LockExclusive)
		}},
		{"unlock with another id is a mismatch", func(t *testing.T, name string) {
			lock(t, s, name, "a", kilolock.LockExclusive)
			for _, id := range []string{"b", ""} {
				_, err := s.Unlock(ctx, name, id, kilolock.UnlockOptions{})
				errorIs(t, err, kilolock.ErrLockMismatch)
				e := errorAs[*kilolock.LockMismatchError](t, err)
				if diff := cmp.Diff(lockInfo("a", "a"), e.Holder); diff != "" {
					t.Errorf("unlock %q: holder (-want +got):\n%s", id, diff)
				}
				if e.Given != id || e.State != name {
					t.Errorf("unlock %q: error = %+v", id, e)
				}
			}
			if diff := cmp.Diff([]string{"a"}, lockIDs(t, name)); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		}},
		{"unlock of a state nobody holds is a mismatch", func(t *testing.T, name string) {
			commit(t, s, name, next(t, s, name))
			_, err := s.Unlock(ctx, name, "a", kilolock.UnlockOptions{})
			e := errorAs[*kilolock.LockMismatchError](t, err)
			if e.Holder != (kilolock.LockInfo{}) {
				t.Errorf("holder = %+v, want none", e.Holder)
			}
		}},
		{"force unlock with no id releases every holder", func(t *testing.T, name string) {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			a := lock(t, s, name, "a", kilolock.LockOptimistic)
			b := lock(t, s, name, "b", kilolock.LockOptimistic)
			got, err := s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]kilolock.Lock{*a, *b}, got); diff != "" {
				t.Errorf("Unlock returned (-want +got):\n%s", diff)
			}
			if ids := lockIDs(t, name); len(ids) != 0 {
				t.Errorf("holders after force unlock = %v", ids)
			}
			got, err = s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true})
			if err != nil || len(got) != 0 {
				t.Errorf("force unlock of an unheld state = %v, %v; want nothing, nil", got, err)
			}
		}},
		{"force unlock with an id releases that holder", func(t *testing.T, name string) {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			a := lock(t, s, name, "a", kilolock.LockOptimistic)
			lock(t, s, name, "b", kilolock.LockOptimistic)
			got, err := s.Unlock(ctx, name, "a", kilolock.UnlockOptions{Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]kilolock.Lock{*a}, got); diff != "" {
				t.Errorf("Unlock returned (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"b"}, lockIDs(t, name)); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		}},
		{"missing state", func(t *testing.T, name string) {
			_, err := s.State(ctx, name)
			errorIs(t, err, kilolock.ErrNotFound)
			_, err = s.Unlock(ctx, name, "a", kilolock.UnlockOptions{})
			errorIs(t, err, kilolock.ErrNotFound)
			_, err = s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true})
			errorIs(t, err, kilolock.ErrNotFound)
			errorIs(t, s.SetAllowLineageChange(ctx, name, true), kilolock.ErrNotFound)
			_, err = s.Snapshot(ctx, name, 1)
			errorIs(t, err, kilolock.ErrNotFound)
			_, err = s.History(ctx, name, kilolock.HistoryOptions{})
			errorIs(t, err, kilolock.ErrNotFound)
			_, err = s.Delete(ctx, name, kilolock.DeleteOptions{})
			errorIs(t, err, kilolock.ErrNotFound)
			_, err = s.State(ctx, name)
			errorIs(t, err, kilolock.ErrNotFound)
		}},
		{"set lock mode creates the state", func(t *testing.T, name string) {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			if st := state(t, s, name); st.LockMode != kilolock.LockOptimistic || st.Current != 0 {
				t.Errorf("state = %+v", st)
			}
			if err := s.SetLockMode(ctx, name, kilolock.LockExclusive); err != nil {
				t.Fatal(err)
			}
			if st := state(t, s, name); st.LockMode != kilolock.LockExclusive {
				t.Errorf("mode = %q, want exclusive", st.LockMode)
			}
			errorIs(t, s.SetLockMode(ctx, name, "bogus"), kilolock.ErrInvalid)
		}},
		{"set lock mode is refused while locks are held", func(t *testing.T, name string) {
			commit(t, s, name, next(t, s, name))
			// refused asserts that SetLockMode(mode) is refused naming
			// the holders, and changes nothing.
			refused := func(t *testing.T, mode kilolock.LockMode, holders ...string) {
				t.Helper()
				before := freeze(t, s, name)
				err := s.SetLockMode(ctx, name, mode)
				errorIs(t, err, kilolock.ErrConflict)
				e := errorAs[*kilolock.ConflictError](t, err)
				var want []kilolock.LockInfo
				for _, id := range holders {
					want = append(want, lockInfo(id, id))
					if !strings.Contains(e.Message, id+"@host") {
						t.Errorf("SetLockMode(%s): message %q does not name holder %s", mode, e.Message, id+"@host")
					}
				}
				if diff := cmp.Diff(want, e.Holders); diff != "" {
					t.Errorf("SetLockMode(%s): Holders (-want +got):\n%s", mode, diff)
				}
				if e.Reason != kilolock.ReasonLocksHeld || e.State != name ||
					e.Hint != "wait for the holders to finish or force-unlock them, then change the mode" {
					t.Errorf("SetLockMode(%s): conflict = %+v", mode, e)
				}
				before.unchanged(t, s, name)
			}

			lock(t, s, name, "a", kilolock.LockExclusive)
			refused(t, kilolock.LockOptimistic, "a")
			refused(t, kilolock.LockExclusive, "a") // the mode it has: refused all the same
			errorIs(t, s.SetLockMode(ctx, name, "bogus"), kilolock.ErrInvalid)
			if _, err := s.Unlock(ctx, name, "a", kilolock.UnlockOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatalf("SetLockMode after unlock: %v", err)
			}
			lock(t, s, name, "b", kilolock.LockOptimistic)
			lock(t, s, name, "c", kilolock.LockOptimistic)
			refused(t, kilolock.LockExclusive, "b", "c")
			if _, err := s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetLockMode(ctx, name, kilolock.LockExclusive); err != nil {
				t.Fatalf("SetLockMode after force unlock: %v", err)
			}
			if st := state(t, s, name); st.LockMode != kilolock.LockExclusive || st.Current != 1 {
				t.Errorf("state = %+v", st)
			}
		}},
		{"allow lineage change is kept", func(t *testing.T, name string) {
			lock(t, s, name, "a", "")
			if st := state(t, s, name); st.AllowLineageChange || st.LockMode != kilolock.LockExclusive {
				t.Errorf("new state = %+v", st)
			}
			if err := s.SetAllowLineageChange(ctx, name, true); err != nil {
				t.Fatal(err)
			}
			if !state(t, s, name).AllowLineageChange {
				t.Error("AllowLineageChange not set")
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, stateName("lock", i)) })
	}

	t.Run("states lists every state by name", func(t *testing.T) {
		s := open(t)
		lock(t, s, "b-state", "x", kilolock.LockExclusive)
		commit(t, s, "a-state", next(t, s, "a-state"))
		if err := s.SetLockMode(ctx, "c-state", kilolock.LockOptimistic); err != nil {
			t.Fatal(err)
		}
		got, err := s.States(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []kilolock.State{*state(t, s, "a-state"), *state(t, s, "b-state"), *state(t, s, "c-state")}
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("States() (-want +got):\n%s", diff)
		}
	})
}

// stateName names the state of test i of a group.
func stateName(group string, i int) string {
	return group + "-" + string(rune('a'+i/26)) + string(rune('a'+i%26))
}

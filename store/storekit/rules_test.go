package storekit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
)

func TestCheckLock(t *testing.T) {
	alice := kilolock.Lock{Info: kilolock.LockInfo{ID: "a", Who: "alice", Operation: "OperationTypeApply"}}
	reader := kilolock.Lock{Info: kilolock.LockInfo{ID: "p", Who: "carol", Operation: kilolock.OperationPlan}, Shared: true}
	runLock := kilolock.Lock{Info: kilolock.LockInfo{ID: "r", Who: "dave", Operation: "OperationTypeApply"}, Run: "run_0123456789abcdef"}
	off := false
	// holders returns alice's lock and n-1 others.
	holders := func(n int) []kilolock.Lock {
		ls := []kilolock.Lock{alice}
		for i := 1; i < n; i++ {
			ls = append(ls, kilolock.Lock{Info: kilolock.LockInfo{ID: fmt.Sprint("h", i)}})
		}
		return ls
	}
	readers := func(n int) []kilolock.Lock {
		var ls []kilolock.Lock
		for i := range n {
			ls = append(ls, kilolock.Lock{Info: kilolock.LockInfo{ID: fmt.Sprint("p", i), Operation: kilolock.OperationPlan}, Shared: true})
		}
		return ls
	}
	plan := kilolock.LockInfo{ID: "p-new", Operation: kilolock.OperationPlan}
	tests := []struct {
		name    string
		st      kilolock.State
		info    kilolock.LockInfo
		opts    kilolock.LockOptions
		blocked string // the holder named, "" when granted
		read    bool   // the lock is a shared read lock
		capped  int    // the LockedError's MaxHolders
	}{
		{"unlocked", kilolock.State{LockMode: kilolock.LockExclusive}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{}, "", false, 0},
		{"exclusive held", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{alice}}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{}, "a", false, 0},
		{"same id again", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: []kilolock.Lock{alice}}, kilolock.LockInfo{ID: "a"}, kilolock.LockOptions{}, "a", false, 0},
		{"optimistic admits", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: []kilolock.Lock{alice}}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{}, "", false, 0},
		{"plan beside an apply", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{alice}}, kilolock.LockInfo{ID: "p2", Operation: kilolock.OperationPlan}, kilolock.LockOptions{SharedPlans: true}, "", true, 0},
		{"plans beside plans", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{reader}}, kilolock.LockInfo{ID: "p2", Operation: kilolock.OperationPlan}, kilolock.LockOptions{SharedPlans: true}, "", true, 0},
		{"apply beside plans", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{reader}}, kilolock.LockInfo{ID: "b", Operation: "OperationTypeApply"}, kilolock.LockOptions{SharedPlans: true}, "", false, 0},
		{"apply names the writer, not a plan", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{reader, alice}}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{SharedPlans: true}, "a", false, 0},
		{"refresh is a writer", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{alice}}, kilolock.LockInfo{ID: "b", Operation: "OperationTypeRefresh"}, kilolock.LockOptions{SharedPlans: true}, "a", false, 0},
		{"classic plans wait", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{alice}}, kilolock.LockInfo{ID: "p2", Operation: kilolock.OperationPlan}, kilolock.LockOptions{}, "a", false, 0},
		{"the state turns sharing off", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{alice}, SharedPlanLocks: &off}, kilolock.LockInfo{ID: "p2", Operation: kilolock.OperationPlan}, kilolock.LockOptions{SharedPlans: true}, "a", false, 0},
		{"a run's lock beside another run's", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{runLock}}, kilolock.LockInfo{ID: "r2"}, kilolock.LockOptions{Run: "run_fedcba9876543210"}, "", false, 0},
		{"a plain writer beside a run's lock", kilolock.State{LockMode: kilolock.LockExclusive, Locks: []kilolock.Lock{runLock}}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{}, "", false, 0},
		{"optimistic below the cap", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: holders(2)}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{MaxHolders: 3}, "", false, 0},
		{"optimistic at the cap", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: holders(3)}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{MaxHolders: 3}, "a", false, 3},
		{"default cap", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: holders(kilolock.DefaultMaxLockHolders)}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{}, "a", false, kilolock.DefaultMaxLockHolders},
		{"below the default cap", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: holders(kilolock.DefaultMaxLockHolders - 1)}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{}, "", false, 0},
		{"no cap", kilolock.State{LockMode: kilolock.LockOptimistic, Locks: holders(kilolock.DefaultMaxLockHolders + 1)}, kilolock.LockInfo{ID: "b"}, kilolock.LockOptions{MaxHolders: -1}, "", false, 0},
		{"plans are capped too", kilolock.State{LockMode: kilolock.LockExclusive, Locks: readers(5)}, plan, kilolock.LockOptions{SharedPlans: true, MaxHolders: 5}, "p0", true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLock(&tt.st, tt.info, tt.opts)
			var le *kilolock.LockedError
			if got := errors.As(err, &le); got != (tt.blocked != "") {
				t.Fatalf("CheckLock = %v, want blocked by %q", err, tt.blocked)
			}
			if tt.blocked != "" && (le.Holder.ID != tt.blocked || !errors.Is(err, kilolock.ErrLocked)) {
				t.Fatalf("holder = %+v, want %s", le.Holder, tt.blocked)
			}
			if le != nil && le.MaxHolders != tt.capped {
				t.Errorf("MaxHolders = %d, want %d", le.MaxHolders, tt.capped)
			}
			if got := IsReadLock(&tt.st, tt.info, tt.opts); got != tt.read {
				t.Errorf("IsReadLock = %v, want %v", got, tt.read)
			}
			if tt.capped > 0 && !strings.Contains(err.Error(), fmt.Sprint(tt.capped, " holders")) {
				t.Errorf("message %q does not name the cap", err)
			}
		})
	}
}

func TestSelectUnlock(t *testing.T) {
	w := kilolock.Lock{Info: kilolock.LockInfo{ID: "w", Who: "alice"}}
	p1 := kilolock.Lock{Info: kilolock.LockInfo{ID: "p1", Who: "carol"}, Shared: true}
	p2 := kilolock.Lock{Info: kilolock.LockInfo{ID: "p2", Who: "erin"}, Shared: true}
	st := &kilolock.State{Name: "s", Locks: []kilolock.Lock{p1, w, p2}}
	ids := func(ls []kilolock.Lock) string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Info.ID)
		}
		return strings.Join(out, ",")
	}
	if got, err := SelectUnlock(st, "p1", kilolock.UnlockOptions{}); err != nil || ids(got) != "p1" {
		t.Errorf("unlock of a read lock = %v, %v; want p1 alone", ids(got), err)
	}
	if got, err := SelectUnlock(st, "", kilolock.UnlockOptions{Force: true}); err != nil || ids(got) != "w" {
		t.Errorf("force-unlock without an id = %v, %v; want the writer alone", ids(got), err)
	}
	if got, err := SelectUnlock(st, "w", kilolock.UnlockOptions{Force: true}); err != nil || ids(got) != "w" {
		t.Errorf("force-unlock of the writer = %v, %v", ids(got), err)
	}
	var me *kilolock.LockMismatchError
	if _, err := SelectUnlock(st, "x", kilolock.UnlockOptions{}); !errors.As(err, &me) || me.Holder.ID != "w" {
		t.Errorf("unlock of an id not held = %v, want a mismatch naming the writer", err)
	}
	if got, err := SelectUnlock(st, "p2", kilolock.UnlockOptions{ReadOnly: true}); err != nil || ids(got) != "p2" {
		t.Errorf("a reader's unlock of its read lock = %v, %v", ids(got), err)
	}
	for _, bad := range []struct {
		id    string
		force bool
	}{{"w", false}, {"w", true}, {"", true}, {"nope", false}} {
		if _, err := SelectUnlock(st, bad.id, kilolock.UnlockOptions{Force: bad.force, ReadOnly: true}); !errors.Is(err, kilolock.ErrReadOnly) {
			t.Errorf("a reader's unlock of %q (force %v) = %v, want ErrReadOnly", bad.id, bad.force, err)
		}
	}
	if got, err := SelectUnlock(&kilolock.State{Name: "s"}, "", kilolock.UnlockOptions{Force: true}); err != nil || len(got) != 0 {
		t.Errorf("force-unlock of an unlocked state = %v, %v", got, err)
	}
}

func TestLockModeRules(t *testing.T) {
	for _, mode := range []kilolock.LockMode{kilolock.LockExclusive, kilolock.LockOptimistic} {
		if err := kilolock.ValidLockMode(mode); err != nil {
			t.Errorf("ValidLockMode(%q) = %v", mode, err)
		}
	}
	var ie *kilolock.InvalidError
	if err := kilolock.ValidLockMode("shared"); !errors.As(err, &ie) || ie.Hint == "" {
		t.Errorf("ValidLockMode(shared) = %v, want *InvalidError with a hint", err)
	}
	if err := CheckLockMode(&kilolock.State{Name: "s"}); err != nil {
		t.Errorf("CheckLockMode of an unlocked state = %v", err)
	}
	planning := &kilolock.State{Name: "s", Locks: []kilolock.Lock{{Info: kilolock.LockInfo{ID: "P", Operation: kilolock.OperationPlan}, Shared: true}}}
	if err := CheckLockMode(planning); err != nil {
		t.Errorf("CheckLockMode while a plan reads = %v, want nil: read locks exclude nobody", err)
	}
	held := &kilolock.State{Name: "s", Locks: []kilolock.Lock{{Info: kilolock.LockInfo{ID: "L1", Who: "alice"}}, {Info: kilolock.LockInfo{ID: "L2", Who: "bob"}}}}
	var ce *kilolock.ConflictError
	err := CheckLockMode(held)
	if !errors.As(err, &ce) || ce.Reason != kilolock.ReasonLocksHeld || len(ce.Holders) != 2 || !strings.Contains(ce.Message, "alice") || !strings.Contains(ce.Message, "bob") {
		t.Errorf("CheckLockMode with two holders = %#v, want a locks_held conflict naming both", err)
	}
}

func TestCheckDelete(t *testing.T) {
	held := func(ids ...string) *kilolock.State {
		st := &kilolock.State{Name: "s"}
		for _, id := range ids {
			st.Locks = append(st.Locks, kilolock.Lock{Info: kilolock.LockInfo{ID: id, Who: id + "@host"}})
		}
		return st
	}
	readHeld := &kilolock.State{Name: "s", Locks: []kilolock.Lock{{Info: kilolock.LockInfo{ID: "P"}, Shared: true}}}
	tests := []struct {
		name   string
		st     *kilolock.State
		opts   kilolock.DeleteOptions
		holder string // "" when allowed
	}{
		{"unlocked", held(), kilolock.DeleteOptions{}, ""},
		{"locked, no id", held("L1"), kilolock.DeleteOptions{}, "L1"},
		{"locked by another", held("L1"), kilolock.DeleteOptions{LockID: "L2"}, "L1"},
		{"by its holder", held("L1"), kilolock.DeleteOptions{LockID: "L1"}, ""},
		{"by one of the optimistic holders", held("L1", "L2"), kilolock.DeleteOptions{LockID: "L2"}, ""},
		{"forced", held("L1"), kilolock.DeleteOptions{Force: true}, ""},
		{"by a plan's read lock", readHeld, kilolock.DeleteOptions{LockID: "P"}, "P"},
	}
	for _, tt := range tests {
		err := CheckDelete(tt.st, tt.opts)
		var locked *kilolock.LockedError
		switch {
		case tt.holder == "" && err != nil:
			t.Errorf("%s: %v, want nil", tt.name, err)
		case tt.holder != "" && (!errors.As(err, &locked) || locked.Holder.ID != tt.holder):
			t.Errorf("%s: %v, want a LockedError naming %s", tt.name, err, tt.holder)
		}
	}
}

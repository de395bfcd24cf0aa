package kilolock

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestValidStateName(t *testing.T) {
	for _, name := range []string{"example", "prod.network", "a", "team-a_v2", "0x"} {
		if err := ValidStateName(name); err != nil {
			t.Errorf("ValidStateName(%q) = %v, want nil", name, err)
		}
	}
	long := make([]byte, 129)
	for i := range long {
		long[i] = 'a'
	}
	for _, name := range []string{"", ".", "..", "../etc", "a/b", ".hidden", "-x", "a b", "a\x00", string(long), "é"} {
		err := ValidStateName(name)
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Hint == "" {
			t.Errorf("ValidStateName(%q) = %v, want *InvalidError with a hint", name, err)
		}
	}
}

func TestCheckLock(t *testing.T) {
	alice := Lock{Info: LockInfo{ID: "a", Who: "alice", Operation: "OperationTypeApply"}}
	reader := Lock{Info: LockInfo{ID: "p", Who: "carol", Operation: OperationPlan}, Shared: true}
	runLock := Lock{Info: LockInfo{ID: "r", Who: "dave", Operation: "OperationTypeApply"}, Run: "run_0123456789abcdef"}
	off := false
	// holders returns alice's lock and n-1 others.
	holders := func(n int) []Lock {
		ls := []Lock{alice}
		for i := 1; i < n; i++ {
			ls = append(ls, Lock{Info: LockInfo{ID: fmt.Sprint("h", i)}})
		}
		return ls
	}
	readers := func(n int) []Lock {
		var ls []Lock
		for i := range n {
			ls = append(ls, Lock{Info: LockInfo{ID: fmt.Sprint("p", i), Operation: OperationPlan}, Shared: true})
		}
		return ls
	}
	plan := LockInfo{ID: "p-new", Operation: OperationPlan}
	tests := []struct {
		name    string
		st      StateInfo
		info    LockInfo
		opts    LockOptions
		blocked string // the holder named, "" when granted
		read    bool   // the lock is a shared read lock
		capped  int    // the LockedError's MaxHolders
	}{
		{"unlocked", StateInfo{LockMode: LockExclusive}, LockInfo{ID: "b"}, LockOptions{}, "", false, 0},
		{"exclusive held", StateInfo{LockMode: LockExclusive, Locks: []Lock{alice}}, LockInfo{ID: "b"}, LockOptions{}, "a", false, 0},
		{"same id again", StateInfo{LockMode: LockOptimistic, Locks: []Lock{alice}}, LockInfo{ID: "a"}, LockOptions{}, "a", false, 0},
		{"optimistic admits", StateInfo{LockMode: LockOptimistic, Locks: []Lock{alice}}, LockInfo{ID: "b"}, LockOptions{}, "", false, 0},
		{"plan beside an apply", StateInfo{LockMode: LockExclusive, Locks: []Lock{alice}}, LockInfo{ID: "p2", Operation: OperationPlan}, LockOptions{SharedPlans: true}, "", true, 0},
		{"plans beside plans", StateInfo{LockMode: LockExclusive, Locks: []Lock{reader}}, LockInfo{ID: "p2", Operation: OperationPlan}, LockOptions{SharedPlans: true}, "", true, 0},
		{"apply beside plans", StateInfo{LockMode: LockExclusive, Locks: []Lock{reader}}, LockInfo{ID: "b", Operation: "OperationTypeApply"}, LockOptions{SharedPlans: true}, "", false, 0},
		{"apply names the writer, not a plan", StateInfo{LockMode: LockExclusive, Locks: []Lock{reader, alice}}, LockInfo{ID: "b"}, LockOptions{SharedPlans: true}, "a", false, 0},
		{"refresh is a writer", StateInfo{LockMode: LockExclusive, Locks: []Lock{alice}}, LockInfo{ID: "b", Operation: "OperationTypeRefresh"}, LockOptions{SharedPlans: true}, "a", false, 0},
		{"classic plans wait", StateInfo{LockMode: LockExclusive, Locks: []Lock{alice}}, LockInfo{ID: "p2", Operation: OperationPlan}, LockOptions{}, "a", false, 0},
		{"the state turns sharing off", StateInfo{LockMode: LockExclusive, Locks: []Lock{alice}, SharedPlanLocks: &off}, LockInfo{ID: "p2", Operation: OperationPlan}, LockOptions{SharedPlans: true}, "a", false, 0},
		{"a run's lock beside another run's", StateInfo{LockMode: LockExclusive, Locks: []Lock{runLock}}, LockInfo{ID: "r2"}, LockOptions{Run: "run_fedcba9876543210"}, "", false, 0},
		{"a plain writer beside a run's lock", StateInfo{LockMode: LockExclusive, Locks: []Lock{runLock}}, LockInfo{ID: "b"}, LockOptions{}, "", false, 0},
		{"optimistic below the cap", StateInfo{LockMode: LockOptimistic, Locks: holders(2)}, LockInfo{ID: "b"}, LockOptions{MaxHolders: 3}, "", false, 0},
		{"optimistic at the cap", StateInfo{LockMode: LockOptimistic, Locks: holders(3)}, LockInfo{ID: "b"}, LockOptions{MaxHolders: 3}, "a", false, 3},
		{"default cap", StateInfo{LockMode: LockOptimistic, Locks: holders(DefaultMaxLockHolders)}, LockInfo{ID: "b"}, LockOptions{}, "a", false, DefaultMaxLockHolders},
		{"below the default cap", StateInfo{LockMode: LockOptimistic, Locks: holders(DefaultMaxLockHolders - 1)}, LockInfo{ID: "b"}, LockOptions{}, "", false, 0},
		{"no cap", StateInfo{LockMode: LockOptimistic, Locks: holders(DefaultMaxLockHolders + 1)}, LockInfo{ID: "b"}, LockOptions{MaxHolders: -1}, "", false, 0},
		{"plans are capped too", StateInfo{LockMode: LockExclusive, Locks: readers(5)}, plan, LockOptions{SharedPlans: true, MaxHolders: 5}, "p0", true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLock(&tt.st, tt.info, tt.opts)
			var le *LockedError
			if got := errors.As(err, &le); got != (tt.blocked != "") {
				t.Fatalf("CheckLock = %v, want blocked by %q", err, tt.blocked)
			}
			if tt.blocked != "" && (le.Holder.ID != tt.blocked || !errors.Is(err, ErrLocked)) {
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
	w := Lock{Info: LockInfo{ID: "w", Who: "alice"}}
	p1 := Lock{Info: LockInfo{ID: "p1", Who: "carol"}, Shared: true}
	p2 := Lock{Info: LockInfo{ID: "p2", Who: "erin"}, Shared: true}
	st := &StateInfo{Name: "s", Locks: []Lock{p1, w, p2}}
	ids := func(ls []Lock) string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Info.ID)
		}
		return strings.Join(out, ",")
	}
	if got, err := SelectUnlock(st, "p1", UnlockOptions{}); err != nil || ids(got) != "p1" {
		t.Errorf("unlock of a read lock = %v, %v; want p1 alone", ids(got), err)
	}
	if got, err := SelectUnlock(st, "", UnlockOptions{Force: true}); err != nil || ids(got) != "w" {
		t.Errorf("force-unlock without an id = %v, %v; want the writer alone", ids(got), err)
	}
	if got, err := SelectUnlock(st, "w", UnlockOptions{Force: true}); err != nil || ids(got) != "w" {
		t.Errorf("force-unlock of the writer = %v, %v", ids(got), err)
	}
	var me *LockMismatchError
	if _, err := SelectUnlock(st, "x", UnlockOptions{}); !errors.As(err, &me) || me.Holder.ID != "w" {
		t.Errorf("unlock of an id not held = %v, want a mismatch naming the writer", err)
	}
	if got, err := SelectUnlock(st, "p2", UnlockOptions{ReadOnly: true}); err != nil || ids(got) != "p2" {
		t.Errorf("a reader's unlock of its read lock = %v, %v", ids(got), err)
	}
	for _, bad := range []struct {
		id    string
		force bool
	}{{"w", false}, {"w", true}, {"", true}, {"nope", false}} {
		if _, err := SelectUnlock(st, bad.id, UnlockOptions{Force: bad.force, ReadOnly: true}); !errors.Is(err, ErrReadOnly) {
			t.Errorf("a reader's unlock of %q (force %v) = %v, want ErrReadOnly", bad.id, bad.force, err)
		}
	}
	if got, err := SelectUnlock(&StateInfo{Name: "s"}, "", UnlockOptions{Force: true}); err != nil || len(got) != 0 {
		t.Errorf("force-unlock of an unlocked state = %v, %v", got, err)
	}
}

func TestCheckCommit(t *testing.T) {
	held := Lock{Info: LockInfo{ID: "L", Who: "alice"}, BaseVersion: 3, BaseSerial: 7}
	base := StateInfo{Name: "s", Current: 3, Serial: 7, Lineage: "lin", LockMode: LockExclusive}
	withLock := base
	withLock.Locks = []Lock{held}
	allowed := base
	allowed.AllowLineageChange = true
	reader := Lock{Info: LockInfo{ID: "P", Who: "carol", Operation: OperationPlan}, BaseVersion: 3, BaseSerial: 7, Shared: true}
	withReader := base
	withReader.Locks = []Lock{reader}
	withBoth := base
	withBoth.Locks = []Lock{reader, held}

	commit := func(parent int64, lockID string, serial uint64, lineage string) *Commit {
		return &Commit{Parent: parent, LockID: lockID, Version: Version{Serial: serial, Lineage: lineage}}
	}
	tests := []struct {
		name   string
		st     StateInfo
		c      *Commit
		want   error
		reason string
	}{
		{"first write", StateInfo{Name: "s", LockMode: LockExclusive}, commit(0, "", 1, "x"), nil, ""},
		{"next serial, no lock", base, commit(3, "", 8, "lin"), nil, ""},
		{"under the held lock", withLock, commit(3, "L", 8, "lin"), nil, ""},
		{"stale parent", base, commit(2, "", 8, "lin"), ErrStale, ""},
		{"lock held, no id", withLock, commit(3, "", 8, "lin"), ErrLocked, ""},
		{"wrong id", withLock, commit(3, "M", 8, "lin"), ErrLockMismatch, ""},
		{"id but unlocked", base, commit(3, "L", 8, "lin"), ErrLockMismatch, ""},
		{"serial not above the lock's base", withLock, commit(3, "L", 7, "lin"), ErrConflict, ReasonStaleSerial},
		{"serial below current", base, commit(3, "", 6, "lin"), ErrConflict, ReasonStaleSerial},
		{"other lineage", base, commit(3, "", 8, "other"), ErrConflict, ReasonLineage},
		{"other lineage allowed", allowed, commit(3, "", 8, "other"), nil, ""},
		{"under a plan's read lock", withReader, commit(3, "P", 8, "lin"), ErrConflict, ReasonReadLock},
		{"no lock beside a plan only", withReader, commit(3, "", 8, "lin"), nil, ""},
		{"no lock beside a plan and a writer", withBoth, commit(3, "", 8, "lin"), ErrLocked, ""},
		{"the writer beside a plan", withBoth, commit(3, "L", 8, "lin"), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCommit(&tt.st, tt.c)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckCommit = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("CheckCommit = %v, want %v", err, tt.want)
			}
			var ce *ConflictError
			if tt.reason != "" && (!errors.As(err, &ce) || ce.Reason != tt.reason || ce.Hint == "") {
				t.Fatalf("CheckCommit = %#v, want reason %s with a hint", err, tt.reason)
			}
		})
	}

	t.Run("force skips lineage, not locks", func(t *testing.T) {
		c := commit(3, "", 8, "other")
		c.Force = true
		if err := CheckCommit(&base, c); err != nil {
			t.Fatalf("forced lineage change = %v", err)
		}
		c = commit(3, "", 8, "lin")
		c.Force = true
		if err := CheckCommit(&withLock, c); !errors.Is(err, ErrLocked) {
			t.Fatalf("forced write under someone's lock = %v, want ErrLocked", err)
		}
	})
}

func TestLockModeRules(t *testing.T) {
	for _, mode := range []LockMode{LockExclusive, LockOptimistic} {
		if err := ValidLockMode(mode); err != nil {
			t.Errorf("ValidLockMode(%q) = %v", mode, err)
		}
	}
	var ie *InvalidError
	if err := ValidLockMode("shared"); !errors.As(err, &ie) || ie.Hint == "" {
		t.Errorf("ValidLockMode(shared) = %v, want *InvalidError with a hint", err)
	}
	if err := CheckLockMode(&StateInfo{Name: "s"}); err != nil {
		t.Errorf("CheckLockMode of an unlocked state = %v", err)
	}
	planning := &StateInfo{Name: "s", Locks: []Lock{{Info: LockInfo{ID: "P", Operation: OperationPlan}, Shared: true}}}
	if err := CheckLockMode(planning); err != nil {
		t.Errorf("CheckLockMode while a plan reads = %v, want nil: read locks exclude nobody", err)
	}
	held := &StateInfo{Name: "s", Locks: []Lock{{Info: LockInfo{ID: "L1", Who: "alice"}}, {Info: LockInfo{ID: "L2", Who: "bob"}}}}
	var ce *ConflictError
	err := CheckLockMode(held)
	if !errors.As(err, &ce) || ce.Reason != ReasonLocksHeld || len(ce.Holders) != 2 || !strings.Contains(ce.Message, "alice") || !strings.Contains(ce.Message, "bob") {
		t.Errorf("CheckLockMode with two holders = %#v, want a locks_held conflict naming both", err)
	}
}

func TestCheckDelete(t *testing.T) {
	held := func(ids ...string) *StateInfo {
		st := &StateInfo{Name: "s"}
		for _, id := range ids {
			st.Locks = append(st.Locks, Lock{Info: LockInfo{ID: id, Who: id + "@host"}})
		}
		return st
	}
	readHeld := &StateInfo{Name: "s", Locks: []Lock{{Info: LockInfo{ID: "P"}, Shared: true}}}
	tests := []struct {
		name   string
		st     *StateInfo
		opts   DeleteOptions
		holder string // "" when allowed
	}{
		{"unlocked", held(), DeleteOptions{}, ""},
		{"locked, no id", held("L1"), DeleteOptions{}, "L1"},
		{"locked by another", held("L1"), DeleteOptions{LockID: "L2"}, "L1"},
		{"by its holder", held("L1"), DeleteOptions{LockID: "L1"}, ""},
		{"by one of the optimistic holders", held("L1", "L2"), DeleteOptions{LockID: "L2"}, ""},
		{"forced", held("L1"), DeleteOptions{Force: true}, ""},
		{"by a plan's read lock", readHeld, DeleteOptions{LockID: "P"}, "P"},
	}
	for _, tt := range tests {
		err := CheckDelete(tt.st, tt.opts)
		var locked *LockedError
		switch {
		case tt.holder == "" && err != nil:
			t.Errorf("%s: %v, want nil", tt.name, err)
		case tt.holder != "" && (!errors.As(err, &locked) || locked.Holder.ID != tt.holder):
			t.Errorf("%s: %v, want a LockedError naming %s", tt.name, err, tt.holder)
		}
	}
}

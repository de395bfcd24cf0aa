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
	alice := Lock{Info: LockInfo{ID: "a", Who: "alice"}}
	// holders returns alice's lock and n-1 others.
	holders := func(n int) []Lock {
		ls := []Lock{alice}
		for i := 1; i < n; i++ {
			ls = append(ls, Lock{Info: LockInfo{ID: fmt.Sprint("h", i)}})
		}
		return ls
	}
	tests := []struct {
		name       string
		st         StateInfo
		id         string
		maxHolders int
		blocked    bool
		capped     int // the LockedError's MaxHolders
	}{
		{"unlocked", StateInfo{LockMode: LockExclusive}, "b", 0, false, 0},
		{"exclusive held", StateInfo{LockMode: LockExclusive, Locks: []Lock{alice}}, "b", 0, true, 0},
		{"same id again", StateInfo{LockMode: LockOptimistic, Locks: []Lock{alice}}, "a", 0, true, 0},
		{"optimistic admits", StateInfo{LockMode: LockOptimistic, Locks: []Lock{alice}}, "b", 0, false, 0},
		{"optimistic below the cap", StateInfo{LockMode: LockOptimistic, Locks: holders(2)}, "b", 3, false, 0},
		{"optimistic at the cap", StateInfo{LockMode: LockOptimistic, Locks: holders(3)}, "b", 3, true, 3},
		{"default cap", StateInfo{LockMode: LockOptimistic, Locks: holders(DefaultMaxLockHolders)}, "b", 0, true, DefaultMaxLockHolders},
		{"below the default cap", StateInfo{LockMode: LockOptimistic, Locks: holders(DefaultMaxLockHolders - 1)}, "b", 0, false, 0},
		{"no cap", StateInfo{LockMode: LockOptimistic, Locks: holders(DefaultMaxLockHolders + 1)}, "b", -1, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLock(&tt.st, LockInfo{ID: tt.id}, LockOptions{MaxHolders: tt.maxHolders})
			var le *LockedError
			if got := errors.As(err, &le); got != tt.blocked {
				t.Fatalf("CheckLock = %v, want blocked=%v", err, tt.blocked)
			}
			if tt.blocked && (le.Holder.ID != "a" || !errors.Is(err, ErrLocked)) {
				t.Fatalf("holder = %+v, want alice's lock", le.Holder)
			}
			if tt.blocked && le.MaxHolders != tt.capped {
				t.Fatalf("MaxHolders = %d, want %d", le.MaxHolders, tt.capped)
			}
			if tt.capped > 0 && !strings.Contains(err.Error(), fmt.Sprint(tt.capped, " holders")) {
				t.Errorf("message %q does not name the cap", err)
			}
		})
	}
}

func TestCheckCommit(t *testing.T) {
	held := Lock{Info: LockInfo{ID: "L", Who: "alice"}, BaseVersion: 3, BaseSerial: 7}
	base := StateInfo{Name: "s", Current: 3, Serial: 7, Lineage: "lin", LockMode: LockExclusive}
	withLock := base
	withLock.Locks = []Lock{held}
	allowed := base
	allowed.AllowLineageChange = true

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

package kilolock

import (
	"errors"
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

func TestCheckCommit(t *testing.T) {
	held := Lock{Info: LockInfo{ID: "L", Who: "alice"}, BaseVersion: 3, BaseSerial: 7}
	base := State{Name: "s", Current: 3, Serial: 7, Lineage: "lin", LockMode: LockExclusive}
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
		st     State
		c      *Commit
		want   error
		reason string
	}{
		{"first write", State{Name: "s", LockMode: LockExclusive}, commit(0, "", 1, "x"), nil, ""},
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

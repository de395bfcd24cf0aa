package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
)

func testCommit(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	web := resource("aws_instance", "web")

	// seed gives state name one version (serial 1) holding one instance.
	seed := func(t *testing.T, name string) {
		t.Helper()
		c := next(t, s, name)
		c.Upserts = append(c.Upserts, instance(t, web, intKey(0), `{"id":"i-0"}`))
		commit(t, s, name, c)
	}
	// change is a commit onto the current version that changes web[0].
	change := func(t *testing.T, name string) *kilolock.Commit {
		t.Helper()
		c := next(t, s, name)
		c.Upserts = append(c.Upserts, instance(t, web, intKey(0), `{"id":"i-changed"}`))
		return c
	}

	type refusal struct {
		name string
		// prepare sets the state up and returns the commit to refuse.
		prepare func(t *testing.T, name string) *kilolock.Commit
		check   func(t *testing.T, err error)
	}
	refusals := []refusal{
		{"parent behind the current version", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Parent = 0
			return c
		}, func(t *testing.T, err error) { errorIs(t, err, kilolock.ErrStale) }},
		{"parent ahead of the current version", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Parent = 5
			return c
		}, func(t *testing.T, err error) { errorIs(t, err, kilolock.ErrStale) }},
		{"write without the exclusive lock", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "holder", kilolock.LockExclusive)
			return change(t, name)
		}, func(t *testing.T, err error) {
			errorIs(t, err, kilolock.ErrLocked)
			if e := errorAs[*kilolock.LockedError](t, err); e.Holder.ID != "holder" {
				t.Errorf("holder = %+v", e.Holder)
			}
		}},
		{"write under another lock id", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "holder", kilolock.LockExclusive)
			c := change(t, name)
			c.LockID = "intruder"
			return c
		}, func(t *testing.T, err error) {
			errorIs(t, err, kilolock.ErrLockMismatch)
			e := errorAs[*kilolock.LockMismatchError](t, err)
			if e.Holder.ID != "holder" || e.Given != "intruder" {
				t.Errorf("mismatch = %+v", e)
			}
		}},
		{"write under a lock that was force-unlocked", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "gone", kilolock.LockExclusive)
			if _, err := s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			c := change(t, name)
			c.LockID = "gone"
			return c
		}, func(t *testing.T, err error) {
			if e := errorAs[*kilolock.LockMismatchError](t, err); e.Holder.ID != "" {
				t.Errorf("holder = %+v, want none", e.Holder)
			}
		}},
		{"another lineage", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Version.Lineage = "another"
			return c
		}, func(t *testing.T, err error) {
			errorIs(t, err, kilolock.ErrConflict)
			e := errorAs[*kilolock.ConflictError](t, err)
			if e.Reason != kilolock.ReasonLineage || e.Lineage != lineage || e.GotLineage != "another" || e.LatestSerial != 1 {
				t.Errorf("conflict = %+v", e)
			}
		}},
		{"serial below the current serial", func(t *testing.T, name string) *kilolock.Commit {
			commit(t, s, name, change(t, name)) // serial 2
			c := next(t, s, name)
			c.Version.Serial = 1
			return c
		}, func(t *testing.T, err error) {
			if e := errorAs[*kilolock.ConflictError](t, err); e.Reason != kilolock.ReasonStaleSerial || e.LatestSerial != 2 {
				t.Errorf("conflict = %+v", e)
			}
		}},
		{"serial not above the one the lock read", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "holder", kilolock.LockExclusive)
			c := change(t, name)
			c.LockID = "holder"
			c.Version.Serial = 1
			return c
		}, func(t *testing.T, err error) {
			if e := errorAs[*kilolock.ConflictError](t, err); e.Reason != kilolock.ReasonStaleSerial || e.BaseSerial != 1 {
				t.Errorf("conflict = %+v", e)
			}
		}},
		{"force does not bypass the lock", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "holder", kilolock.LockExclusive)
			c := change(t, name)
			c.Force = true
			return c
		}, func(t *testing.T, err error) { errorIs(t, err, kilolock.ErrLocked) }},
		{"an expected lock released and taken again", func(t *testing.T, name string) *kilolock.Commit {
			// The same id, holder and operation, acquired anew: not the
			// lock the writer saw (Commit.Expect).
			first := lock(t, s, name, "holder", kilolock.LockExclusive)
			if _, err := s.Unlock(ctx, name, "holder", kilolock.UnlockOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond) // a later acquisition time, on any clock
			lock(t, s, name, "holder", kilolock.LockExclusive)
			c := change(t, name)
			c.LockID, c.Expect = "holder", &kilolock.Expectation{Lock: *first}
			return c
		}, func(t *testing.T, err error) { errorIs(t, err, kilolock.ErrStale) }},
		{"an expected lock no longer held", func(t *testing.T, name string) *kilolock.Commit {
			l := lock(t, s, name, "holder", kilolock.LockExclusive)
			if _, err := s.Unlock(ctx, name, "", kilolock.UnlockOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			c := change(t, name)
			c.LockID, c.Expect = "holder", &kilolock.Expectation{Lock: *l}
			return c
		}, func(t *testing.T, err error) { errorIs(t, err, kilolock.ErrStale) }},
		{"malformed instance object", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Upserts[0].Object = []byte(`{"index_key":0,`)
			return c
		}, func(t *testing.T, err error) { errorIs(t, err, kilolock.ErrInvalid) }},
	}
	for i, tt := range refusals {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			name := stateName("refuse", i)
			seed(t, name)
			c := tt.prepare(t, name)
			before := freeze(t, s, name)
			v, stats, err := s.Commit(ctx, name, c)
			if err == nil {
				t.Fatalf("Commit succeeded (version %d), want a refusal", v.Number)
			}
			tt.check(t, err)
			if v != nil || stats != (kilolock.WriteStats{}) {
				t.Errorf("refused Commit returned %v, %+v; want nil and zero stats", v, stats)
			}
			before.unchanged(t, s, name)
		})
	}

	t.Run("refuses to create a state", func(t *testing.T) {
		for i, c := range []*kilolock.Commit{
			{Parent: 1, Version: kilolock.Version{Serial: 1, Lineage: lineage}},
			{LockID: "x", Version: kilolock.Version{Serial: 1, Lineage: lineage}},
		} {
			name := stateName("nocreate", i)
			if _, _, err := s.Commit(ctx, name, c); err == nil {
				t.Errorf("commit %d succeeded", i)
			}
			if _, err := s.State(ctx, name); !errors.Is(err, kilolock.ErrNotFound) {
				t.Errorf("after refused commit %d: State = %v, want ErrNotFound", i, err)
			}
		}
	})

	admitted := []struct {
		name    string
		prepare func(t *testing.T, name string) *kilolock.Commit
		check   func(t *testing.T, name string, v *kilolock.Version)
	}{
		{"the first version of a new state", func(t *testing.T, name string) *kilolock.Commit {
			if _, err := s.Delete(ctx, name, kilolock.DeleteOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			return next(t, s, name)
		}, func(t *testing.T, name string, v *kilolock.Version) {
			st := state(t, s, name)
			if v.Number != 1 || v.State != name || st.Current != 1 || st.CurrentID != v.ID || st.LockMode != kilolock.LockExclusive {
				t.Errorf("version %+v, state %+v", v, st)
			}
		}},
		{"a write under the exclusive lock", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "holder", kilolock.LockExclusive)
			c := change(t, name)
			c.LockID = "holder"
			return c
		}, func(t *testing.T, name string, v *kilolock.Version) {
			if v.LockID != "holder" {
				t.Errorf("Version.LockID = %q, want holder", v.LockID)
			}
			if ids := state(t, s, name).Locks; len(ids) != 1 {
				t.Errorf("holders after the write = %+v, want the lock kept", ids)
			}
		}},
		{"a write under the lock it expected", func(t *testing.T, name string) *kilolock.Commit {
			// What the lock saw is the state: the write needs no read.
			var seen kilolock.State
			l, err := s.Lock(ctx, name, lockInfo("holder", "holder"), kilolock.LockOptions{Mode: kilolock.LockExclusive, Seen: &seen})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(state(t, s, name), &seen, cmpOpts...); diff != "" {
				t.Errorf("LockOptions.Seen is not the state the lock left (-State +Seen):\n%s", diff)
			}
			x := &kilolock.Expectation{Lock: *l}
			if !x.Holds(&seen) {
				t.Errorf("the lock's own expectation does not hold on what it saw: %+v", seen.Locks)
			}
			c := change(t, name)
			c.LockID, c.Expect = "holder", x
			return c
		}, func(t *testing.T, name string, v *kilolock.Version) {
			if st := state(t, s, name); st.Current != v.Number || v.LockID != "holder" {
				t.Errorf("version %+v, state %+v", v, st)
			}
		}},
		{"checkpoints under one lock", func(t *testing.T, name string) *kilolock.Commit {
			lock(t, s, name, "holder", kilolock.LockExclusive)
			c := change(t, name)
			c.LockID = "holder"
			commit(t, s, name, c)
			c = next(t, s, name)
			c.LockID = "holder"
			return c
		}, func(t *testing.T, name string, v *kilolock.Version) {
			if v.Number != 3 || v.Serial != 3 {
				t.Errorf("version %d serial %d, want 3 and 3", v.Number, v.Serial)
			}
		}},
		{"a write without a lock on an optimistic state", func(t *testing.T, name string) *kilolock.Commit {
			if err := s.SetLockMode(ctx, name, kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			lock(t, s, name, "holder", kilolock.LockOptimistic)
			return change(t, name)
		}, nil},
		{"another lineage with force", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Version.Lineage = "another"
			c.Force = true
			return c
		}, func(t *testing.T, name string, v *kilolock.Version) {
			if got := state(t, s, name).Lineage; got != "another" {
				t.Errorf("lineage = %q, want another", got)
			}
		}},
		{"another lineage once allowed", func(t *testing.T, name string) *kilolock.Commit {
			if err := s.SetAllowLineageChange(ctx, name, true); err != nil {
				t.Fatal(err)
			}
			c := change(t, name)
			c.Version.Lineage = "another"
			return c
		}, nil},
		{"a stale serial with force", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Version.Serial = 0
			c.Force = true
			return c
		}, func(t *testing.T, name string, v *kilolock.Version) {
			if st := state(t, s, name); st.Serial != 0 || v.Serial != 0 {
				t.Errorf("serial = %d, want 0", st.Serial)
			}
		}},
		{"the same serial again", func(t *testing.T, name string) *kilolock.Commit {
			c := change(t, name)
			c.Version.Serial = 1
			return c
		}, nil},
	}
	for i, tt := range admitted {
		t.Run("admits "+tt.name, func(t *testing.T) {
			name := stateName("admit", i)
			seed(t, name)
			c := tt.prepare(t, name)
			v, stats, err := s.Commit(ctx, name, c)
			if err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if stats.Rows <= 0 || stats.Bytes <= 0 {
				t.Errorf("WriteStats = %+v, want rows and bytes", stats)
			}
			if v.ID == 0 || v.Number != c.Parent+1 || v.Created.IsZero() {
				t.Errorf("version = %+v", v)
			}
			if tt.check != nil {
				tt.check(t, name, v)
			}
		})
	}
}

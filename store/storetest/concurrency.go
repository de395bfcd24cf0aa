package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

func testConcurrency(t *testing.T, open Opener) {
	t.Run("random locks and unlocks match a linearizable model", func(t *testing.T) {
		CheckLockModel(t, open(t), 27)
	})
	t.Run("the holders cap holds under contention", func(t *testing.T) {
		s := open(t)
		const name, lockers, limit = "capped", 16, 5
		if err := s.SetLockMode(context.Background(), name, kilolock.LockOptimistic); err != nil {
			t.Fatal(err)
		}
		errs := raceLocks(s, name, lockers, kilolock.LockOptions{MaxHolders: limit})
		won := 0
		for i, err := range errs {
			var e *kilolock.LockedError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &e) || e.MaxHolders != limit:
				t.Errorf("locker %d: %v, want a LockedError naming the cap", i, err)
			}
		}
		if n := len(state(t, s, name).Locks); won != limit || n != limit {
			t.Errorf("%d lockers won and %d hold the state, want %d", won, n, limit)
		}
	})
	t.Run("one of many lockers wins", func(t *testing.T) {
		s := open(t)
		for _, existing := range []bool{false, true} {
			name := fmt.Sprintf("contended-%t", existing)
			if existing {
				commit(t, s, name, next(t, s, name))
			}
			errs := raceLocks(s, name, 16, kilolock.LockOptions{Mode: kilolock.LockExclusive})
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil && winner >= 0:
					t.Errorf("existing %t: locks %d and %d both won", existing, winner, i)
				case err == nil:
					winner = i
				}
			}
			if winner < 0 {
				t.Fatalf("existing %t: no locker won: %v", existing, errs)
			}
			want := fmt.Sprintf("lock-%02d", winner)
			for i, err := range errs {
				if i == winner {
					continue
				}
				var e *kilolock.LockedError
				if !errors.As(err, &e) || e.Holder.ID != want {
					t.Errorf("existing %t: locker %d: %v, want a LockedError naming %s", existing, i, err, want)
				}
			}
			if st := state(t, s, name); len(st.Locks) != 1 || st.Locks[0].Info.ID != want {
				t.Errorf("existing %t: holders = %+v, want %s", existing, st.Locks, want)
			}
		}
	})

	t.Run("unlocked writers retrying on ErrStale all land", func(t *testing.T) {
		s := open(t)
		const name, writers, each = "raced", 8, 5
		r := resource("terraform_data", "w")
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				ctx := context.Background()
				for i := range each {
					in, err := graph.NewInstance(r, object(intKey(int64(w*each+i)), "", "", fmt.Sprintf(`{"writer":%d,"i":%d}`, w, i), nil))
					if err != nil {
						errs <- err
						return
					}
					for attempt := 0; ; attempt++ {
						if attempt == 1000 {
							errs <- fmt.Errorf("writer %d: commit %d stale 1000 times", w, i)
							return
						}
						c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: lineage, Actor: fmt.Sprint(w)}}
						st, err := s.State(ctx, name)
						switch {
						case errors.Is(err, kilolock.ErrNotFound):
						case err != nil:
							errs <- err
							return
						default:
							c.Parent, c.Version.Serial = st.Current, st.Serial+1
						}
						c.Upserts = []graph.Instance{in}
						_, _, err = s.Commit(ctx, name, c)
						if errors.Is(err, kilolock.ErrStale) {
							continue
						}
						if err != nil {
							errs <- fmt.Errorf("writer %d: commit %d: %w", w, i, err)
							return
						}
						break
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}

		ctx := context.Background()
		h, err := s.History(ctx, name, kilolock.HistoryOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != writers*each {
			t.Fatalf("%d versions, want %d", len(h), writers*each)
		}
		for i, v := range h {
			if want := int64(writers*each - i); v.Number != want || v.Serial != uint64(want) || v.Added != 1 || v.Instances != int(want) {
				t.Errorf("history[%d] = number %d serial %d added %d instances %d, want number and serial %d, one added",
					i, v.Number, v.Serial, v.Added, v.Instances, want)
			}
		}
		snap, err := s.Snapshot(ctx, name, writers*each)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, in := range snap.Instances {
			seen[in.ID()]++
		}
		for k := range writers * each {
			if id := fmt.Sprintf("terraform_data.w[%d]", k); seen[id] != 1 {
				t.Errorf("%s is in the last version %d times, want once", id, seen[id])
			}
		}
		if len(snap.Instances) != writers*each {
			t.Errorf("last version holds %d instances, want %d", len(snap.Instances), writers*each)
		}
	})
}

// testWriteStats checks that a version costs what it changes, not what the
// state holds.
func testWriteStats(t *testing.T, open Opener) {
	s := open(t)
	ctx := context.Background()
	const name, size = "big", 1000
	r := resource("aws_instance", "fleet")
	c := next(t, s, name)
	objectBytes := 0
	for i := range size {
		in := instance(t, r, intKey(int64(i)), fmt.Sprintf(`{"id":"i-%04d","ami":"ami-0123456789","tags":{"team":"storage","n":"%d"}}`, i, i), "data.aws_ami.ubuntu")
		objectBytes += len(in.Object)
		c.Upserts = append(c.Upserts, in)
	}
	_, first, err := s.Commit(ctx, name, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first write of %d instances: %d rows, %d bytes", size, first.Rows, first.Bytes)
	if first.Rows < size || first.Bytes < objectBytes {
		t.Errorf("first write counted %+v, want at least %d rows and %d bytes", first, size, objectBytes)
	}

	c = next(t, s, name)
	c.Upserts = []graph.Instance{
		instance(t, r, intKey(10), `{"id":"i-0010","ami":"ami-new"}`, "data.aws_ami.ubuntu"),
		instance(t, r, intKey(500), `{"id":"i-0500","ami":"ami-new"}`, "data.aws_ami.ubuntu"),
	}
	v, stats, err := s.Commit(ctx, name, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 changes of %d: %d rows, %d bytes", size, stats.Rows, stats.Bytes)
	if stats.Rows < 1 || stats.Rows > 10 || stats.Bytes <= 0 || stats.Bytes > 64<<10 {
		t.Errorf("a 2-change commit wrote %+v, want 1 to 10 rows and at most 64 KiB", stats)
	}
	if v.Changed != 2 || v.Added != 0 || v.Removed != 0 || v.Instances != size {
		t.Errorf("version counts = +%d ~%d -%d of %d", v.Added, v.Changed, v.Removed, v.Instances)
	}

	c = next(t, s, name)
	c.Upserts = []graph.Instance{instance(t, r, intKey(10), `{"id":"i-0010","ami":"ami-new"}`, "data.aws_ami.ubuntu")}
	_, stats, err = s.Commit(ctx, name, c)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Rows > 3 {
		t.Errorf("a commit that changes nothing wrote %d rows, want at most 3", stats.Rows)
	}
}

// raceLocks has n lockers take locks lock-00, lock-01… on name at once,
// and returns what each got.
func raceLocks(s kilolock.Store, name string, n int, opts kilolock.LockOptions) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.Lock(context.Background(), name, lockInfo(fmt.Sprintf("lock-%02d", i), "w"), opts)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

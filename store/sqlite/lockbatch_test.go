package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/store/sqlstore"
	"github.com/kilolock/kilolock/store/storetest"
)

// holdWrite holds s's write connection in a transaction until the
// returned function is called, so that locks and unlocks queue behind it.
func holdWrite(t *testing.T, s *Store) (release func()) {
	t.Helper()
	in, out := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.d.Write(context.Background(), func(sqlstore.Tx) error {
			close(in)
			<-out
			return nil
		})
	}()
	<-in
	return func() {
		close(out)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// queueLen is how many locks and unlocks wait for s's write connection.
func queueLen(s *Store) int {
	s.d.locks.mu.Lock()
	defer s.d.locks.mu.Unlock()
	return len(s.d.locks.ops)
}

// queue starts op and waits until it has queued, behind those before it.
func queue(s *Store, op func() error) <-chan error {
	n := queueLen(s)
	ch := make(chan error, 1)
	go func() { ch <- op() }()
	for queueLen(s) == n {
		runtime.Gosched()
	}
	return ch
}

// TestLockBatch: the locks and unlocks that queue while a transaction
// holds the write connection run in one transaction after it, in the
// order they came, each in a savepoint of its own: a refused lock, a
// failing function's and a panicking one's writes are rolled back, their
// neighbours' kept, and each caller gets its own answer; a caller whose
// context ended while it waited gets its error, and its op never runs.
func TestLockBatch(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, filepath.Join(t.TempDir(), "kl.db"))
	info := func(id string) kilolock.LockInfo { return kilolock.LockInfo{ID: id, Operation: "OperationTypeApply"} }
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.Lock(ctx, name, info("setup"), kilolock.LockOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Unlock(ctx, name, "setup", kilolock.UnlockOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lockOp := func(name, id string) func() error {
		return func() error { _, err := s.Lock(ctx, name, info(id), kilolock.LockOptions{}); return err }
	}
	unlockOp := func(name, id string) func() error {
		return func() error { _, err := s.Unlock(ctx, name, id, kilolock.UnlockOptions{}); return err }
	}
	dropLocks := func(tx sqlstore.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM locks WHERE lock_id != $1`, "nothing")
		return err
	}
	failing := errors.New("fails after its write")
	txs, ran := s.d.locks.txs.Load(), s.d.locks.ran.Load()

	release := holdWrite(t, s)
	cancelled, cancel := context.WithCancel(ctx)
	answers := []<-chan error{
		queue(s, lockOp("a", "a1")),
		queue(s, lockOp("a", "a2")), // refused: a1 holds a
		queue(s, lockOp("b", "b1")),
		queue(s, unlockOp("b", "b1")),
		queue(s, lockOp("b", "b2")), // b1 is gone by now
		queue(s, func() error {
			return s.d.WriteLock(ctx, func(tx sqlstore.Tx) error {
				if err := dropLocks(tx); err != nil {
					return err
				}
				return failing
			})
		}),
		queue(s, func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = errors.New("panicked")
				}
			}()
			return s.d.WriteLock(ctx, func(tx sqlstore.Tx) error {
				if err := dropLocks(tx); err != nil {
					return err
				}
				panic("after its write")
			})
		}),
		queue(s, func() error {
			_, err := s.Lock(cancelled, "c", info("c1"), kilolock.LockOptions{})
			return err
		}),
		queue(s, unlockOp("a", "nobody")), // refused: a1 holds a
	}
	cancel()
	if err := <-answers[7]; !errors.Is(err, context.Canceled) {
		t.Fatalf("the lock whose context ended while it waited: %v, want context.Canceled", err)
	}
	release()
	want := []func(error) bool{
		func(err error) bool { return err == nil },
		func(err error) bool {
			var e *kilolock.LockedError
			return errors.As(err, &e) && e.Holder.ID == "a1"
		},
		func(err error) bool { return err == nil },
		func(err error) bool { return err == nil },
		func(err error) bool { return err == nil },
		func(err error) bool { return errors.Is(err, failing) },
		func(err error) bool { return err != nil && err.Error() == "panicked" },
		nil,
		func(err error) bool {
			var e *kilolock.LockMismatchError
			return errors.As(err, &e) && e.Holder.ID == "a1"
		},
	}
	for i, ok := range want {
		if ok == nil {
			continue
		}
		if err := <-answers[i]; !ok(err) {
			t.Errorf("op %d: %v", i, err)
		}
	}
	if n, m := s.d.locks.txs.Load()-txs, s.d.locks.ran.Load()-ran; n != 1 || m != 8 {
		t.Errorf("%d transactions ran %d ops, want 1 transaction of 8 (the cancelled one not run)", n, m)
	}
	storetest.CheckLocksLeft(t, s, map[string]string{"a": "a1", "b": "b2", "c": ""})
}

// TestLockBatchCommitFails: when a batch's COMMIT fails, every op of it
// gets that error and nothing of it is kept; the next batch runs.
func TestLockBatchCommitFails(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "kl.db")
	s := openAt(t, path)
	info := kilolock.LockInfo{ID: "x1", Operation: "OperationTypeApply"}
	if _, err := s.Lock(ctx, "x", info, kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Unlock(ctx, "x", "x1", kilolock.UnlockOptions{}); err != nil {
		t.Fatal(err)
	}
	release := holdWrite(t, s)
	locked := queue(s, func() error { _, err := s.Lock(ctx, "x", info, kilolock.LockOptions{}); return err })
	// A lock of a state that does not exist, its foreign key checked at
	// COMMIT.
	bad := queue(s, func() error {
		return s.d.WriteLock(ctx, func(tx sqlstore.Tx) error {
			if _, err := tx.Exec(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO locks (state_id, lock_id, info, who, operation, base_version, base_serial, acquired_at)
				VALUES ($1, 'ghost', '{}', '', '', 0, 0, {now})`, int64(-1))
			return err
		})
	})
	release()
	errLock, errBad := <-locked, <-bad
	if errBad == nil || !strings.Contains(errBad.Error(), "FOREIGN KEY") || errLock == nil || !strings.Contains(errLock.Error(), errBad.Error()) {
		t.Fatalf("a batch whose COMMIT fails: the lock's answer %v, the bad op's %v; want both the COMMIT's error", errLock, errBad)
	}
	storetest.CheckLocksLeft(t, s, map[string]string{"x": ""})
	if _, err := s.Lock(ctx, "x", info, kilolock.LockOptions{}); err != nil {
		t.Fatalf("a lock after the failed batch: %v", err)
	}
	storetest.CheckLocksLeft(t, openReopened(t, s, path), map[string]string{"x": "x1"})
}

// openReopened closes s and opens its file again.
func openReopened(t *testing.T, s *Store, path string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return openAt(t, path)
}

// TestLockModel is storetest.CheckLockModel on a file, with and without
// WithLazyLockSync, and what it left, read again from the file reopened.
func TestLockModel(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		t.Run(map[bool]string{false: "full", true: "lazy"}[lazy], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kl.db")
			var opts []Option
			if lazy {
				opts = append(opts, WithLazyLockSync())
			}
			s, err := Open(t.Context(), path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			txs, ran := s.d.locks.txs.Load(), s.d.locks.ran.Load()
			left := storetest.CheckLockModel(t, s, 27)
			t.Logf("%d locks and unlocks in %d transactions", s.d.locks.ran.Load()-ran, s.d.locks.txs.Load()-txs)
			storetest.CheckLocksLeft(t, openReopened(t, s, path), left)
		})
	}
}

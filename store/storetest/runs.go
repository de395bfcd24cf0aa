package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/reserve"
)

// testPlanLocks: plans' shared read locks are kept as such, and the
// setting that turns them off.
func testPlanLocks(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	shared := kilolock.LockOptions{SharedPlans: true}
	plan := func(id string) kilolock.LockInfo {
		li := lockInfo(id, id)
		li.Operation = kilolock.OperationPlan
		return li
	}
	if _, err := s.Lock(ctx, "s", lockInfo("w", "alice"), shared); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"p1", "p2"} {
		l, err := s.Lock(ctx, "s", plan(id), shared)
		if err != nil || !l.Shared {
			t.Fatalf("a plan's lock beside the writer = %+v, %v; want a shared lock", l, err)
		}
	}
	if _, err := s.Lock(ctx, "s", lockInfo("w2", "bob"), shared); errorAs[*kilolock.LockedError](t, err).Holder.ID != "w" {
		t.Errorf("a second writer was refused naming %v, want the writer w", err)
	}
	st := state(t, s, "s")
	if len(st.Locks) != 3 || st.Locks[0].Shared || !st.Locks[1].Shared || !st.Locks[2].Shared {
		t.Fatalf("locks read back: %+v", st.Locks)
	}
	// A plan's lock cannot write.
	c := next(t, s, "s")
	c.LockID = "p1"
	_, _, err := s.Commit(ctx, "s", c)
	if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonReadLock {
		t.Errorf("a write under a read lock = %v, want %s", err, kilolock.ReasonReadLock)
	}
	// A forced unlock without an id releases the writer alone.
	released, err := s.Unlock(ctx, "s", "", kilolock.UnlockOptions{Force: true})
	if err != nil || len(released) != 1 || released[0].Info.ID != "w" {
		t.Fatalf("force-unlock = %+v, %v; want the writer alone", released, err)
	}
	if _, err := s.Unlock(ctx, "s", "p1", kilolock.UnlockOptions{ReadOnly: true}); err != nil {
		t.Errorf("a reader's release of its read lock: %v", err)
	}
	if got := state(t, s, "s").Locks; len(got) != 1 || got[0].Info.ID != "p2" {
		t.Errorf("locks left: %+v", got)
	}
	if _, err := s.Lock(ctx, "s", lockInfo("w3", "carol"), kilolock.LockOptions{ReadOnly: true, SharedPlans: true}); !errors.Is(err, kilolock.ErrReadOnly) {
		t.Errorf("a read-only caller's write lock = %v, want ErrReadOnly", err)
	}

	// The state's own setting wins over the server's default.
	off := false
	if err := s.SetSharedPlanLocks(ctx, "s", &off); err != nil {
		t.Fatal(err)
	}
	if got := state(t, s, "s").SharedPlanLocks; got == nil || *got {
		t.Fatalf("SharedPlanLocks read back %v, want false", got)
	}
	if _, err := s.Lock(ctx, "s", lockInfo("w4", "dave"), shared); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "s", plan("p3"), shared); errorAs[*kilolock.LockedError](t, err).Holder.ID != "w4" {
		t.Errorf("a plan where plans do not share = %v, want refused naming w4", err)
	}
	if err := s.SetSharedPlanLocks(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if got := state(t, s, "s").SharedPlanLocks; got != nil {
		t.Errorf("SharedPlanLocks after nil = %v", *got)
	}
	if err := s.SetSharedPlanLocks(ctx, "new", &off); err != nil || state(t, s, "new").SharedPlanLocks == nil {
		t.Errorf("SetSharedPlanLocks on a missing state: %v", err)
	}
	// The lock mode changes while only plans hold the state.
	if _, err := s.Unlock(ctx, "s", "w4", kilolock.UnlockOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLockMode(ctx, "s", kilolock.LockOptimistic); err != nil {
		t.Errorf("SetLockMode while a plan holds its read lock: %v", err)
	}
}

// runStore returns s as a kilolock.RunStore.
func runStore(t testing.TB, s kilolock.Store) kilolock.RunStore {
	t.Helper()
	rs, ok := s.(kilolock.RunStore)
	if !ok {
		t.Fatalf("%T keeps no apply runs (kilolock.RunStore)", s)
	}
	return rs
}

func reservations(t testing.TB, specs ...string) []kilolock.Reservation {
	t.Helper()
	var out []kilolock.Reservation
	for i := 0; i+1 < len(specs); i += 2 {
		p, err := reserve.Parse(specs[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, kilolock.Reservation{Pattern: p, Mode: reserve.Mode(specs[i+1])})
	}
	res, err := reserve.Normalize(out)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// newRun creates a run on state name reserving specs (pattern, mode…).
func newRun(t testing.TB, rs kilolock.RunStore, name, actor string, now time.Time, specs ...string) *kilolock.ApplyRun {
	t.Helper()
	run := &kilolock.ApplyRun{ID: kilolock.NewRunID(), State: name, Actor: actor, Lease: time.Minute, Reservations: reservations(t, specs...)}
	if err := rs.CreateRun(context.Background(), run, now); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return run
}

// testRuns: apply runs take their reservations all at once or none, block
// one another and plain locks as the rules say, are held to them at
// commit, expire with their lease and end releasing everything.
func testRuns(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	rs := runStore(t, s)
	t0 := time.Now().UTC().Truncate(time.Second)
	web := resource("aws_instance", "web")
	db := resource("aws_db_instance", "db")
	base := next(t, s, "s")
	base.Upserts = []graph.Instance{instance(t, web, intKey(0), `{"id":"w0"}`), instance(t, web, intKey(1), `{"id":"w1"}`), instance(t, db, graph.IndexKey{}, `{"id":"d"}`)}
	commit(t, s, "s", base)

	a := newRun(t, rs, "s", "alice@laptop", t0, "aws_instance.web", "write", "aws_db_instance.db", "read")
	if a.Status != kilolock.RunWaiting || !a.Expires.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a new run = %+v", a)
	}
	got, bs, err := rs.AcquireRun(ctx, a.ID, t0)
	if err != nil || len(bs) != 0 || got.Status != kilolock.RunActive {
		t.Fatalf("AcquireRun(a) = %+v, %v, %v", got, bs, err)
	}
	// b writes what a reads, and reads what a writes: blocked, by both.
	b := newRun(t, rs, "s", "bob@ci", t0, "aws_db_instance.db", "write", "aws_instance.web[1]", "read")
	_, bs, err = rs.AcquireRun(ctx, b.ID, t0.Add(time.Second))
	if err != nil || len(bs) != 2 || bs[0].Run != a.ID || bs[0].Holder != "alice@laptop" {
		t.Fatalf("AcquireRun(b) = blockers %+v, %v; want a's two reservations", bs, err)
	}
	if r, _ := rs.Run(ctx, b.ID, t0.Add(time.Second)); r.Status != kilolock.RunWaiting || len(r.Reservations) != 2 {
		t.Fatalf("b after a refusal: %+v (all or nothing: it must hold nothing and keep waiting)", r)
	}
	// c is disjoint: it runs beside a.
	c := newRun(t, rs, "s", "carol@ci", t0, "aws_instance.web[9]", "write")
	if _, bs, err := rs.AcquireRun(ctx, c.ID, t0); err != nil || len(bs) != 1 {
		t.Fatalf("c's write on web[9] against a's write on web = %v, %v; want blocked", bs, err)
	}
	if _, err := rs.EndRun(ctx, c.ID, kilolock.RunEnd{Status: kilolock.RunFailed, By: "carol@ci", Reason: "gave up"}, t0); err != nil {
		t.Fatal(err)
	}

	// A plain writer's LOCK on the exclusive state waits for a; a plan's does not.
	if _, err := s.Lock(ctx, "s", lockInfo("plain", "dave"), kilolock.LockOptions{SharedPlans: true}); errorAs[*kilolock.LockedError](t, err).Holder.ID != a.ID {
		t.Errorf("a plain LOCK during run a = %v, want refused naming the run", err)
	}
	pl := lockInfo("plan", "erin")
	pl.Operation = kilolock.OperationPlan
	if _, err := s.Lock(ctx, "s", pl, kilolock.LockOptions{SharedPlans: true}); err != nil {
		t.Errorf("a plan's LOCK during run a: %v", err)
	}
	// a's CLI locks for the run and writes within its reservations.
	if _, err := s.Lock(ctx, "s", lockInfo("a-lock", "alice"), kilolock.LockOptions{Run: a.ID}); err != nil {
		t.Fatalf("a's run lock: %v", err)
	}
	in := next(t, s, "s")
	in.LockID = "a-lock"
	in.Upserts = []graph.Instance{instance(t, web, intKey(0), `{"id":"w0-v2"}`)}
	commit(t, s, "s", in)
	out := next(t, s, "s")
	out.LockID = "a-lock"
	out.Upserts = []graph.Instance{instance(t, db, graph.IndexKey{}, `{"id":"d-v2"}`)}
	f := freeze(t, s, "s")
	_, _, err = s.Commit(ctx, "s", out)
	if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonOutOfScope || len(ce.Addresses) != 1 || ce.Addresses[0] != "aws_db_instance.db" {
		t.Errorf("a's write outside its write reservations = %+v", err)
	}
	f.unchanged(t, s, "s")
	// A lock-less write to what a reserved is refused naming a; elsewhere it goes in.
	plain := next(t, s, "s")
	plain.Upserts = []graph.Instance{instance(t, web, intKey(1), `{"id":"w1-v2"}`)}
	_, _, err = s.Commit(ctx, "s", plain)
	if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonReserved || len(ce.Addresses) != 1 {
		t.Errorf("a plain write to a reserved address = %+v", err)
	}
	f.unchanged(t, s, "s")
	free := next(t, s, "s")
	free.Upserts = []graph.Instance{instance(t, resource("aws_s3_bucket", "logs"), graph.IndexKey{}, `{"id":"b"}`)}
	commit(t, s, "s", free)

	// a ends: its reservations and its lock go at once, and b takes its own.
	ended, err := rs.EndRun(ctx, a.ID, kilolock.RunEnd{Status: kilolock.RunSucceeded, By: "alice@laptop"}, t0.Add(2*time.Second))
	if err != nil || ended.Status != kilolock.RunSucceeded || ended.Ended.IsZero() {
		t.Fatalf("EndRun(a) = %+v, %v", ended, err)
	}
	for _, l := range state(t, s, "s").Locks {
		if l.Run == a.ID {
			t.Errorf("a's lock outlived its run: %+v", l)
		}
	}
	if _, err := rs.EndRun(ctx, a.ID, kilolock.RunEnd{Status: kilolock.RunAborted}, t0.Add(3*time.Second)); errorAs[*kilolock.RunEndedError](t, err).Run.Status != kilolock.RunSucceeded {
		t.Errorf("ending an ended run: %v", err)
	}
	// b's attempt read its time before a ended (its transaction waited
	// for a's): it takes its reservations when a ended, not before.
	if got, bs, err := rs.AcquireRun(ctx, b.ID, t0.Add(time.Second)); err != nil || len(bs) != 0 || !got.Acquired.Equal(ended.Ended) {
		t.Fatalf("b once a ended = %+v, %v, %v; want it acquired at a's end, %s", got, bs, err, ended.Ended)
	}
	// b's lease runs out: it reads as expired, blocks nothing, and its
	// renewal says so.
	late := t0.Add(3*time.Second + 2*time.Minute)
	if r, err := rs.Run(ctx, b.ID, late); err != nil || r.Status != kilolock.RunExpired {
		t.Fatalf("b past its lease = %+v, %v", r, err)
	}
	if _, err := rs.RenewRun(ctx, b.ID, late); errorAs[*kilolock.RunEndedError](t, err).Run.Status != kilolock.RunExpired {
		t.Errorf("renewing an expired run: %v", err)
	}
	d := newRun(t, rs, "s", "frank@ci", late, "*", "write")
	if _, bs, err := rs.AcquireRun(ctx, d.ID, late); err != nil || len(bs) != 0 {
		t.Errorf("after b expired, a run on everything = %v, %v", bs, err)
	}
	// An aborted run learns it at its renewal, and its lock writes nothing.
	if _, err := s.Lock(ctx, "s", lockInfo("d-lock", "frank"), kilolock.LockOptions{Run: d.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.EndRun(ctx, d.ID, kilolock.RunEnd{Status: kilolock.RunAborted, By: "op", Reason: "aborted"}, late); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.RenewRun(ctx, d.ID, late); errorAs[*kilolock.RunEndedError](t, err).Run.EndedBy != "op" {
		t.Errorf("renewing an aborted run: %v", err)
	}
	if _, err := s.Lock(ctx, "s", lockInfo("d-lock-2", "frank"), kilolock.LockOptions{Run: d.ID}); !errors.Is(err, kilolock.ErrConflict) {
		t.Errorf("a LOCK for an aborted run = %v, want refused", err)
	}
	// Its CLI, still running, keeps its lock: its last write is refused as
	// an aborted run's, and its unlock finds the lock.
	late2 := next(t, s, "s")
	late2.LockID = "d-lock"
	late2.Upserts = []graph.Instance{instance(t, web, intKey(0), `{"id":"w0-after-abort"}`)}
	f = freeze(t, s, "s")
	_, _, err = s.Commit(ctx, "s", late2)
	if ce := errorAs[*kilolock.ConflictError](t, err); ce.Reason != kilolock.ReasonRunEnded {
		t.Errorf("the write of an aborted run's CLI = %v, want %s", err, kilolock.ReasonRunEnded)
	}
	f.unchanged(t, s, "s")
	if released, err := s.Unlock(ctx, "s", "d-lock", kilolock.UnlockOptions{}); err != nil || len(released) != 1 {
		t.Errorf("the aborted run's CLI unlocking = %v, %v", released, err)
	}

	// Listing: newest first, in flight only, of one state.
	all, err := rs.Runs(ctx, kilolock.RunFilter{State: "s"}, late)
	if err != nil || len(all) != 4 || all[0].ID != d.ID {
		t.Fatalf("Runs(s) = %d runs, %v; want 4, the newest (d) first", len(all), err)
	}
	for _, r := range all {
		if len(r.Reservations) == 0 {
			t.Errorf("run %s listed without its reservations", r.ID)
		}
	}
	if fl, err := rs.Runs(ctx, kilolock.RunFilter{State: "s", InFlight: true}, late); err != nil || len(fl) != 0 {
		t.Errorf("in flight after everything ended = %+v, %v", fl, err)
	}
	if _, err := rs.Runs(ctx, kilolock.RunFilter{State: "nope"}, late); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("Runs of a missing state = %v", err)
	}
	if _, err := rs.Run(ctx, "run_0000000000000000", late); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("a missing run = %v", err)
	}
}

// testNoCreateLocks: a lock that may not create its state (a read
// credential's, or one in a suspended workspace) on a state that does not
// exist: a plan's is granted Transient and stores nothing, so its unlock
// finds nothing and the state is still unknown; a read-only caller's write
// lock is refused, an apply run's is ErrNotFound; on a state that exists
// the lock is kept as any other.
func testNoCreateLocks(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	plan := lockInfo("p1", "ci")
	plan.Operation = kilolock.OperationPlan
	readOnly := kilolock.LockOptions{SharedPlans: true, ReadOnly: true, NoCreate: true}
	l, err := s.Lock(ctx, "new", plan, readOnly)
	if err != nil || !l.Transient || !l.Shared || l.BaseVersion != 0 || l.Info.ID != "p1" {
		t.Fatalf("a read-only plan's lock of a new state = %+v, %v; want a transient shared lock", l, err)
	}
	// Where plans do not share, the suspended workspace's plan gets a
	// transient lock too: there is nothing to write under it.
	if l, err := s.Lock(ctx, "new", lockInfo("p2", "ci"), kilolock.LockOptions{NoCreate: true}); err != nil || !l.Transient || l.Shared {
		t.Errorf("a non-creating write lock of a new state = %+v, %v; want a transient lock", l, err)
	}
	apply := lockInfo("w", "ci")
	if _, err := s.Lock(ctx, "new", apply, readOnly); errorAs[*kilolock.ReadOnlyLockError](t, err) == nil {
		t.Errorf("a read-only apply lock of a new state = %v, want a *ReadOnlyLockError", err)
	}
	if _, err := s.Lock(ctx, "new", apply, kilolock.LockOptions{NoCreate: true, Run: "run_0123456789abcdef"}); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("an apply run's non-creating lock of a new state = %v, want ErrNotFound", err)
	}
	if _, err := s.Unlock(ctx, "new", "p1", kilolock.UnlockOptions{ReadOnly: true}); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("the unlock of a transient lock = %v, want ErrNotFound (nothing held)", err)
	}
	if _, err := s.State(ctx, "new"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("State after non-creating locks = %v, want ErrNotFound: they created it", err)
	}
	all, err := s.States(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range all {
		if st.Name == "new" {
			t.Errorf("States lists %+v, which no lock created", st)
		}
	}
	// On a state that exists the lock is kept.
	if _, err := s.Lock(ctx, "old", apply, kilolock.LockOptions{}); err != nil {
		t.Fatal(err)
	}
	plan.ID = "p3"
	if l, err := s.Lock(ctx, "old", plan, readOnly); err != nil || l.Transient || !l.Shared {
		t.Fatalf("a read-only plan's lock of a state that exists = %+v, %v; want a kept shared lock", l, err)
	}
	if got := state(t, s, "old").Locks; len(got) != 2 {
		t.Errorf("locks of the existing state: %+v, want the writer and the plan", got)
	}
}

package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/retention"
	"github.com/kilolock/kilolock/tenancy"
)

// retentionStore returns s as a retention.RetentionStore.
func retentionStore(t testing.TB, s kilolock.Store) retention.RetentionStore {
	t.Helper()
	rs, ok := s.(retention.RetentionStore)
	if !ok {
		t.Fatalf("%T keeps no retention policies (retention.RetentionStore)", s)
	}
	return rs
}

// prune prunes state name by r in transactions of batch versions until
// nothing is left to prune, and returns the versions pruned.
func prune(t testing.TB, rs retention.RetentionStore, r retention.PruneRequest, batch int) []int64 {
	t.Helper()
	r.Max = batch
	var all []int64
	for {
		res, err := rs.Prune(context.Background(), r)
		if err != nil {
			t.Fatalf("Prune(%s): %v", r.State, err)
		}
		all = append(all, res.Versions...)
		if len(res.Versions) < batch {
			return all
		}
	}
}

// keptModels are the models of history whose version numbers are not in
// pruned.
func keptModels(history []model, pruned []int64) []model {
	var out []model
	for _, m := range history {
		if !slices.Contains(pruned, m.version.Number) {
			out = append(out, m)
		}
	}
	return out
}

// numbers lists from..to.
func numbers(from, to int64, except ...int64) []int64 {
	var out []int64
	for n := from; n <= to; n++ {
		if !slices.Contains(except, n) {
			out = append(out, n)
		}
	}
	return out
}

// checkPruned checks a state after pruning against the models of the
// versions it keeps: every kept version reads back as it was committed,
// ChangesSince and HashesAt answer as if the kept versions were the whole
// history, the pruned ones are gone, and the store is whole (checkWhole).
func checkPruned(t *testing.T, s kilolock.Store, name string, kept []model, pruned []int64) {
	t.Helper()
	checkSnapshots(t, s, name, kept)
	checkChanges(t, s, name, kept)
	for _, n := range pruned {
		if _, err := s.Snapshot(context.Background(), name, n); !errors.Is(err, kilolock.ErrNotFound) {
			t.Errorf("Snapshot(%d) of a pruned version = %v, want ErrNotFound", n, err)
		}
	}
	h, err := s.History(context.Background(), name, kilolock.HistoryOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != len(kept) {
		t.Errorf("History lists %d versions, want the %d kept", len(h), len(kept))
	}
	checkWhole(t, s)
}

// checkWhole checks the rows of the whole store: every interval's payload
// is there and every payload is some interval's; every interval holds a
// version its state has (its bounds read as the first version kept at or
// after them, so they may be pruned numbers), and no two intervals of a key
// meet with the same hash; no pruned version is still there.
func checkWhole(t testing.TB, s kilolock.Store) {
	t.Helper()
	d := dumpOf(t, s)
	key := func(row map[string]any, cols ...string) string { return fmt.Sprint(pick(row, cols...)...) }
	versions := map[int64][]int64{} // a state's version numbers, ascending
	payloads, used := map[string]bool{}, map[string]bool{}
	d.each(t, "state_versions", func(r map[string]any) {
		id := num(t, r["state_id"])
		versions[id] = append(versions[id], num(t, r["number"]))
	})
	for _, vs := range versions {
		slices.Sort(vs)
	}
	// keptAt is the version a bound of state id reads as, 0 past the last.
	keptAt := func(id, bound int64) int64 {
		vs := versions[id]
		if i, _ := slices.BinarySearch(vs, bound); i < len(vs) {
			return vs[i]
		}
		return 0
	}
	d.each(t, "payloads", func(r map[string]any) { payloads[key(r, "state_id", "hash")] = true })
	for table, k := range map[string]string{"instance_intervals": "instance_id", "output_intervals": "name"} {
		type span struct {
			from, to int64 // as read; to 0 while current
			hash     any
		}
		spans := map[string][]span{}
		d.each(t, table, func(r map[string]any) {
			h := key(r, "state_id", "hash")
			used[h] = true
			if !payloads[h] {
				t.Errorf("%s row %v: its payload is missing", table, r)
			}
			id := num(t, r["state_id"])
			sp := span{from: keptAt(id, num(t, r["valid_from"])), hash: r["hash"]}
			if r["valid_to"] != nil {
				sp.to = keptAt(id, num(t, r["valid_to"]))
			}
			if sp.from == 0 || (r["valid_to"] != nil && sp.to <= sp.from) {
				t.Errorf("%s row %v holds no version its state has", table, r)
			}
			spans[key(r, "state_id", k)] = append(spans[key(r, "state_id", k)], sp)
		})
		for kk, sps := range spans {
			slices.SortFunc(sps, func(a, b span) int { return int(a.from - b.from) })
			for i := 1; i < len(sps); i++ {
				if sps[i-1].to == sps[i].from && fmt.Sprint(sps[i-1].hash) == fmt.Sprint(sps[i].hash) {
					t.Errorf("%s %s: two intervals meet at version %d with the same hash", table, kk, sps[i].from)
				}
			}
		}
	}
	for p := range payloads {
		if !used[p] {
			t.Errorf("payload %s is no interval's: pruning left it behind", p)
		}
	}
	d.each(t, "pruned_versions", func(r map[string]any) {
		if slices.Contains(versions[num(t, r["state_id"])], num(t, r["number"])) {
			t.Errorf("version %v is marked pruned but is still there", r)
		}
	})
}

// num is a dump's integer.
func num(t testing.TB, v any) int64 {
	t.Helper()
	n, err := v.(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func pick(row map[string]any, cols ...string) []any {
	out := make([]any, 0, 2*len(cols))
	for _, c := range cols {
		out = append(out, row[c], "/")
	}
	return out
}

// testRetention: policies round-trip; pruning keeps what its limits keep
// and what is protected (the current version, pinned versions, a lock
// holder's or an apply run's base and what follows), in batches; what it
// keeps reads back as committed; the intervals and payloads only pruned
// versions held go; history keeps a marker and the audit log an entry; a
// dry run changes nothing.
func testRetention(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	rs := retentionStore(t, s)
	by := kilolock.Caller{Actor: "ops@host", From: "test", RequestID: "req-1"}

	t.Run("policies", func(t *testing.T) {
		ps := []retention.RetentionPolicy{
			{Scope: retention.RetentionServer, KeepLast: 100, UpdatedBy: "a"},
			{Scope: retention.RetentionState, Target: "prod", KeepLast: 10, KeepDays: 30, UpdatedBy: "b"},
			{Scope: retention.RetentionEnvironment, Target: "env_1", KeepDays: 7, UpdatedBy: "c"},
		}
		for i := range ps {
			must(t, rs.PutRetentionPolicy(ctx, &ps[i], by))
		}
		ps[0].KeepLast = 50
		must(t, rs.PutRetentionPolicy(ctx, &ps[0], by))
		got, err := rs.RetentionPolicies(ctx)
		must(t, err)
		want := []retention.RetentionPolicy{ps[2], ps[0], ps[1]}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("RetentionPolicies (-want +got):\n%s", diff)
		}
		must(t, rs.DeleteRetentionPolicy(ctx, retention.RetentionEnvironment, "env_1", by))
		errorIs(t, rs.DeleteRetentionPolicy(ctx, retention.RetentionEnvironment, "env_1", by), kilolock.ErrNotFound)
		for _, p := range ps {
			_ = rs.DeleteRetentionPolicy(ctx, p.Scope, p.Target, by)
		}
	})

	t.Run("keep last", func(t *testing.T) {
		const name = "keep"
		history := commitModel(t, s, name, 40, 20260701)
		before := rowsOf(t, s)
		r := retention.PruneRequest{State: name, KeepLast: 10, Policy: "state:keep keep_last=10", By: by}
		dry, err := rs.Prune(ctx, retention.PruneRequest{State: name, KeepLast: 10, DryRun: true})
		must(t, err)
		if diff := cmp.Diff(numbers(1, 30), dry.Versions); diff != "" {
			t.Errorf("dry run (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(before, rowsOf(t, s)); diff != "" {
			t.Errorf("a dry run changed the store:\n%s", diff)
		}
		pruned := prune(t, rs, r, 7)
		if !slices.Equal(pruned, dry.Versions) {
			t.Errorf("pruned %v, the dry run listed %v", pruned, dry.Versions)
		}
		checkPruned(t, s, name, history[30:], pruned)
		if again := prune(t, rs, r, 7); len(again) != 0 {
			t.Errorf("a second run pruned %v", again)
		}
		marks, err := rs.PrunedVersions(ctx, name, 0, 0)
		must(t, err)
		if len(marks) != 1 || marks[0].From != 1 || marks[0].To != 30 || marks[0].Versions != 30 || marks[0].PrunedBy != "ops@host" || marks[0].Policy != r.Policy {
			t.Errorf("PrunedVersions = %+v, want one run @1-@30 by ops@host under %q", marks, r.Policy)
		}
		if ts, ok := s.(tenancy.TenantStore); ok {
			entries, err := ts.Audit(ctx, kilolock.AuditFilter{Limit: 100})
			must(t, err)
			n := 0
			for _, e := range entries {
				if e.Action == "retention.prune" && e.Target == name && e.Actor == "ops@host" && e.RequestID == "req-1" {
					n++
				}
			}
			if n != 5 {
				t.Errorf("%d retention.prune audit entries, want one per batch of 7 of 30 versions: 5", n)
			}
		}
	})

	t.Run("protected", func(t *testing.T) {
		const name = "guarded"
		now := time.Now().UTC()
		history := commitModel(t, s, name, 30, 20260702)
		must(t, rs.PinVersion(ctx, name, retention.VersionPin{Number: 3, Reason: retention.PinRollbackPlan, Expires: now.Add(time.Hour)}))
		must(t, rs.PinVersion(ctx, name, retention.VersionPin{Number: 6, Reason: retention.PinRollbackPlan, Expires: now.Add(-time.Second)}))
		errorIs(t, rs.PinVersion(ctx, name, retention.VersionPin{Number: 99, Reason: "x", Expires: now}), kilolock.ErrNotFound)
		runs := runStore(t, s)
		run := &kilolock.ApplyRun{ID: kilolock.NewRunID(), State: name, Actor: "alice", Lease: time.Hour, SourceSerial: history[19].version.Serial}
		must(t, runs.CreateRun(ctx, run, now))
		r := retention.PruneRequest{State: name, KeepLast: 1, Policy: "keep_last=1", By: by, Now: now}
		pruned := prune(t, rs, r, 4)
		if want := numbers(1, 19, 3); !slices.Equal(pruned, want) {
			t.Errorf("pruned %v; want %v: not the pinned @3, nor the run's base @20 and after", pruned, want)
		}
		checkPruned(t, s, name, keptModels(history, pruned), pruned)
		// The run ends: its base is free; the pin stays until it expires.
		if _, err := runs.EndRun(ctx, run.ID, kilolock.RunEnd{Status: kilolock.RunSucceeded, By: "alice"}, now); err != nil {
			t.Fatal(err)
		}
		more := prune(t, rs, r, 4)
		if want := numbers(20, 29); !slices.Equal(more, want) {
			t.Errorf("after the run ended, pruned %v; want %v", more, want)
		}
		checkPruned(t, s, name, keptModels(history, append(pruned, more...)), append(pruned, more...))
		r.Now = now.Add(2 * time.Hour)
		if last := prune(t, rs, r, 4); !slices.Equal(last, []int64{3}) {
			t.Errorf("once its pin expired, pruned %v; want [3]", last)
		}
		checkPruned(t, s, name, history[29:], numbers(1, 29))
	})

	t.Run("tagged", func(t *testing.T) {
		const name = "tagged"
		ts, ok := s.(history.TagStore)
		if !ok {
			t.Skip("the store keeps no tags")
		}
		models := commitModel(t, s, name, 12, 20261201)
		must(t, ts.PutTag(ctx, name, &history.Tag{Name: "pre-migration", Version: 4, Actor: "alice"},
			&kilolock.AuditEntry{Actor: "alice", Action: "tag.set", Target: name + "@pre-migration", From: "test"}))
		r := retention.PruneRequest{State: name, KeepLast: 2, Policy: "keep_last=2", By: by, Now: time.Now().UTC()}
		pruned := prune(t, rs, r, 100)
		if want := numbers(1, 10, 4); !slices.Equal(pruned, want) {
			t.Errorf("pruned %v; want %v: never the tagged @4", pruned, want)
		}
		checkPruned(t, s, name, keptModels(models, pruned), pruned)
		// Untagged, it goes with the next run.
		must(t, ts.DeleteTag(ctx, name, "pre-migration",
			&kilolock.AuditEntry{Actor: "alice", Action: "tag.unset", Target: name + "@pre-migration", From: "test"}))
		if more := prune(t, rs, r, 100); !slices.Equal(more, []int64{4}) {
			t.Errorf("once untagged, pruned %v; want [4]", more)
		}
	})

	t.Run("lock base", func(t *testing.T) {
		const name = "held"
		c := next(t, s, name)
		for i := range 10 {
			c.Upserts = []graph.Instance{instance(t, resource("aws_instance", "h"), intKey(int64(i%3)), fmt.Sprintf(`{"id":"%d"}`, i))}
			commit(t, s, name, c)
			c = next(t, s, name)
		}
		li := lockInfo("plan", "bob")
		li.Operation = kilolock.OperationPlan
		if l, err := s.Lock(ctx, name, li, kilolock.LockOptions{SharedPlans: true}); err != nil || !l.Shared || l.BaseVersion != 10 {
			t.Fatalf("a plan's lock = %+v, %v", l, err)
		}
		for i := range 5 {
			c.Upserts = []graph.Instance{instance(t, resource("aws_instance", "h"), intKey(int64(i%3)), fmt.Sprintf(`{"id":"later-%d"}`, i))}
			commit(t, s, name, c)
			c = next(t, s, name)
		}
		r := retention.PruneRequest{State: name, KeepLast: 1, By: by}
		if got := prune(t, rs, r, 100); !slices.Equal(got, numbers(1, 9)) {
			t.Errorf("pruned %v under a lock whose base is @10; want @1-@9", got)
		}
		checkWhole(t, s)
		if _, err := s.Unlock(ctx, name, "plan", kilolock.UnlockOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := prune(t, rs, r, 100); !slices.Equal(got, numbers(10, 14)) {
			t.Errorf("pruned %v once the lock was released; want @10-@14", got)
		}
		checkWhole(t, s)
	})

	t.Run("undone changes", func(t *testing.T) {
		// x changes and changes back, y goes and comes back, z comes and
		// goes, all within the pruned @2-@3: the kept @4 changed none of
		// them against the kept @1, and reads so.
		const name = "undone"
		web := resource("aws_instance", "web")
		x1, x2 := instance(t, web, strKey("x"), `{"id":"x1"}`), instance(t, web, strKey("x"), `{"id":"x2"}`)
		y := instance(t, web, strKey("y"), `{"id":"y"}`)
		z := instance(t, web, strKey("z"), `{"id":"z"}`)
		w1, w2 := instance(t, web, strKey("w"), `{"id":"w1"}`), instance(t, web, strKey("w"), `{"id":"w2"}`)
		steps := []func(c *kilolock.Commit){
			func(c *kilolock.Commit) { c.Upserts = []graph.Instance{x1, y, w1} },
			func(c *kilolock.Commit) { c.Upserts, c.Removed = []graph.Instance{x2, z}, []string{y.ID()} },
			func(c *kilolock.Commit) { c.Upserts, c.Removed = []graph.Instance{x1, y}, []string{z.ID()} },
			func(c *kilolock.Commit) { c.Upserts = []graph.Instance{w2} },
		}
		var vs []*kilolock.Version
		for _, step := range steps {
			c := next(t, s, name)
			step(c)
			vs = append(vs, commit(t, s, name, c))
		}
		must(t, rs.PinVersion(ctx, name, retention.VersionPin{Number: 1, Reason: "test", Expires: time.Now().Add(time.Hour)}))
		if got := prune(t, rs, retention.PruneRequest{State: name, KeepLast: 1, By: by}, 10); !slices.Equal(got, []int64{2, 3}) {
			t.Fatalf("pruned %v, want @2-@3", got)
		}
		changes, err := s.ChangesSince(ctx, name, 1)
		must(t, err)
		want := []kilolock.ChangeRecord{{Version: 4, Actor: vs[3].Actor, ID: w1.ID()}}
		if diff := cmp.Diff(want, changes, cmpOpts...); diff != "" {
			t.Errorf("ChangesSince(@1) after pruning @2-@3 (-want +got):\n%s", diff)
		}
		checkWhole(t, s)
	})

	t.Run("cost follows what is pruned", func(t *testing.T) {
		// @1 creates 200 instances, each later version changes 2 of them.
		// Pruning @1 deletes the 2 intervals only it held; pruning each
		// later version deletes the 2 the next one closed: no run rewrites
		// the intervals the pruned versions left open.
		const name = "wide"
		web := resource("aws_instance", "wide")
		c := next(t, s, name)
		for i := range 200 {
			c.Upserts = append(c.Upserts, instance(t, web, intKey(int64(i)), fmt.Sprintf(`{"id":"%d"}`, i)))
		}
		commit(t, s, name, c)
		for v := range 8 {
			c = next(t, s, name)
			for j := range 2 {
				c.Upserts = append(c.Upserts, instance(t, web, intKey(int64(2*v+j)), fmt.Sprintf(`{"id":"%d","v":%d}`, 2*v+j, v)))
			}
			commit(t, s, name, c)
		}
		for v := int64(1); v <= 8; v++ {
			res, err := rs.Prune(ctx, retention.PruneRequest{State: name, KeepLast: 1, Max: 1, By: by})
			must(t, err)
			if !slices.Equal(res.Versions, []int64{v}) || res.Intervals != 2 || res.Moved != 0 || res.Payloads != 2 {
				t.Errorf("pruning @%d: %+v; want @%d only, 2 intervals and 2 payloads deleted, none moved", v, res, v)
			}
		}
		checkWhole(t, s)
		snap, err := s.Snapshot(ctx, name, 9)
		must(t, err)
		if len(snap.Instances) != 200 {
			t.Errorf("the current version holds %d instances, want 200", len(snap.Instances))
		}
	})

	t.Run("runs around pins", func(t *testing.T) {
		// Random pins come and go between runs of random sizes: whatever
		// bounds earlier runs left at pruned numbers, every kept version
		// reads back as committed and the store stays whole.
		const name = "pinned"
		history := commitModel(t, s, name, 60, 20261202)
		rng := rand.New(rand.NewPCG(7, 11))
		now := time.Now().UTC()
		var pruned []int64
		for run := range 12 {
			for range 3 {
				n := history[rng.IntN(len(history))].version.Number
				if !slices.Contains(pruned, n) {
					_ = rs.PinVersion(ctx, name, retention.VersionPin{Number: n, Reason: fmt.Sprintf("run-%d", run),
						Expires: now.Add(time.Duration(run+1+rng.IntN(3)) * time.Minute)})
				}
			}
			r := retention.PruneRequest{State: name, KeepLast: int64(60 - 4*run), By: by, Now: now.Add(time.Duration(run) * time.Minute)}
			pruned = append(pruned, prune(t, rs, r, 1+rng.IntN(5))...)
			slices.Sort(pruned)
			checkPruned(t, s, name, keptModels(history, pruned), pruned)
		}
		if len(pruned) < 30 {
			t.Errorf("pruned only %v", pruned)
		}
	})

	t.Run("keep days", func(t *testing.T) {
		const name = "aged"
		history := commitModel(t, s, name, 12, 20260703)
		r := retention.PruneRequest{State: name, Before: history[5].version.Created, By: by}
		pruned := prune(t, rs, r, 100)
		if !slices.Equal(pruned, numbers(1, 5)) {
			t.Errorf("pruned %v created before @6's time; want @1-@5", pruned)
		}
		checkPruned(t, s, name, history[5:], pruned)
		// Both limits: a version either keeps stays.
		r.KeepLast = 9
		if got := prune(t, rs, r, 100); len(got) != 0 {
			t.Errorf("with keep_last 9 beside the time limit, pruned %v; want none", got)
		}
		_, err := rs.Prune(ctx, retention.PruneRequest{State: "missing", KeepLast: 1})
		errorIs(t, err, kilolock.ErrNotFound)
	})
}

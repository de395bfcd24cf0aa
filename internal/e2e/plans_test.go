package e2e_test

import (
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

// applySleep is how long the apply that plans run beside takes.
const applySleep = 15

// TestPlansNeverWait (issue 11): on an exclusive state, the default, a
// `tofu plan` started while a 15-second `tofu apply` runs finishes at once
// (its LOCK is a shared read lock), four plans at once too; a second
// apply still fails fast without -lock-timeout and waits with it; refresh
// and apply -refresh-only still take the write lock; a plan saved before
// another apply committed is refused by the CLI as stale.
func TestPlansNeverWait(t *testing.T) {
	skipShort(t)
	eachStore(t, func(t *testing.T, databaseURL string) {
		const state = "plans"
		srv := setup(t, databaseURL)
		stack := slowResources(2)
		cur := seedStack(t, srv, state, stack...)
		dirs := stackDirs(t, srv, state, 5, stack...)
		planArgs := func(in inputs, extra ...string) []string {
			args := in.applyArgs(0, extra...)
			args[0] = "plan"
			return append(args[:1], args[2:]...) // no -auto-approve
		}

		// The long apply replaces slow_a.
		wantA := cur.with("slow_a", "v2")
		applied := make(chan outcome, 1)
		started := time.Now()
		go func() {
			stdout, stderr, code := dirs[0].Run(wantA.applyArgs(applySleep)...)
			applied <- outcome{stdout: stdout, stderr: stderr, code: code, took: time.Since(started)}
		}()
		if ids := waitLocks(t, srv, state, 1, 30*time.Second); len(ids) != 1 {
			t.Fatalf("the apply took no lock: %v", ids)
		}
		running := func(what string) {
			t.Helper()
			select {
			case o := <-applied:
				applied <- o
				t.Fatalf("%s: the apply already ended (exit %d after %s): the check proves nothing", what, o.code, o.took)
			default:
			}
		}

		// One plan beside the apply.
		var stdout, stderr string
		var code int
		took := timed(t, "plan during the apply", func() { stdout, stderr, code = dirs[1].Run(planArgs(cur)...) })
		running("one plan")
		if code != 0 || !strings.Contains(stdout, "No changes.") {
			t.Fatalf("tofu plan during the apply: exit %d\n%s\n%s", code, stdout, stderr)
		}
		t.Logf("TIMING %s plan latency during an apply: %s", t.Name(), took.Round(time.Millisecond))

		// kl status names the writer and the reader while both hold.
		reader := newLock("dave@laptop")
		reader.Operation = "OperationTypePlan"
		if code, body := lock(t, srv, state, reader); code != 200 {
			t.Fatalf("a plan's LOCK beside the apply: %d %s", code, body)
		}
		status := mustKL(t, "--server", srv.URL, "status", state)
		t.Logf("kl status during the apply, with a plan reading:\n%s", status)
		if !strings.Contains(status, "1 writer; 1 plan reads beside") || !strings.Contains(status, "read   OperationTypePlan") {
			t.Errorf("kl status does not show the writer and the reader:\n%s", status)
		}
		if code, body := unlock(t, srv, state, reader); code != 200 {
			t.Fatalf("the plan's UNLOCK: %d %s", code, body)
		}

		// Four plans at once, and one that saves its plan file.
		outs, wall := runTogether(t, "four plans during the apply",
			run{"plan 1", dirs[1], planArgs(cur)}, run{"plan 2", dirs[2], planArgs(cur)},
			run{"plan 3", dirs[3], planArgs(cur)}, run{"plan 4 (saved)", dirs[4], planArgs(cur.with("slow_b", "v3"), "-out=stale.tfplan")},
		)
		running("four plans")
		mustSucceed(t, outs)
		t.Logf("TIMING %s four plans at once during the apply: %s", t.Name(), wall.Round(time.Millisecond))

		// Writers still exclude writers: refresh, -refresh-only, and a
		// second apply without -lock-timeout fail at once.
		for _, args := range [][]string{
			append(cur.applyArgs(0, "-lock-timeout=0s"), "-refresh-only"),
			{"refresh", "-no-color", "-lock-timeout=0s", "-var=slow_a=v1", "-var=slow_b=v1"},
			cur.with("slow_b", "v2").applyArgs(0, "-lock-timeout=0s"),
		} {
			var se string
			var c int
			took := timed(t, "tofu "+args[0]+" during the apply", func() { _, se, c = dirs[2].Run(args...) })
			running(args[0])
			if c == 0 || !strings.Contains(se, "Error acquiring the state lock") || !strings.Contains(se, "OperationTypeApply") {
				t.Errorf("tofu %s during the apply: exit %d in %s, want a lock error naming the apply\n%s", strings.Join(args, " "), c, took, se)
			}
		}
		// With -lock-timeout the second apply waits its turn.
		wantB := wantA.with("slow_b", "v2")
		waited := make(chan outcome, 1)
		go func() {
			stdout, stderr, code := dirs[2].Run(wantB.applyArgs(0, "-lock-timeout=2m")...)
			waited <- outcome{stdout: stdout, stderr: stderr, code: code, took: time.Since(started)}
		}()
		first := <-applied
		if first.code != 0 {
			t.Fatalf("the long apply: exit %d\n%s\n%s", first.code, first.stdout, first.stderr)
		}
		second := <-waited
		if second.code != 0 || second.took < first.took {
			t.Fatalf("the waiting apply: exit %d after %s (the first ended after %s)\n%s\n%s", second.code, second.took, first.took, second.stdout, second.stderr)
		}
		t.Logf("TIMING %s the long apply: %s; the second, waiting with -lock-timeout, ended after %s", t.Name(), first.took.Round(time.Millisecond), second.took.Round(time.Millisecond))
		if got := stateInputs(t, srv, state); !maps.Equal(got, wantB) {
			t.Fatalf("state after both applies: %v, want %v", got, wantB)
		}

		// The plan saved during the first apply read a state that has moved.
		before := getState(t, srv, state)
		_, se, c := dirs[4].Run("apply", "-no-color", "stale.tfplan")
		if c == 0 || !strings.Contains(flat(se), "Saved plan is stale") {
			t.Errorf("tofu apply of a stale saved plan: exit %d, want the CLI to refuse it as stale\n%s", c, se)
		}
		if after := getState(t, srv, state); string(after) != string(before) {
			t.Errorf("the refused stale plan changed the state")
		}
	})
}

// TestReadTokenRunsPlans: on the authenticated lane a read-scope token runs
// a plain `tofu plan` (no -lock=false: its LOCK is a shared read lock),
// also while an apply holds the state, and its apply is still refused.
func TestReadTokenRunsPlans(t *testing.T) {
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		rw := c.withEnv(t, c.path("app"), c.ws, c.auto.Secret)
		rw.rev("v1")
		rw.Must("init", "-no-color")
		rw.Must("apply", "-auto-approve", "-no-color")

		read := c.automation(t, "read")
		ro := c.withEnv(t, c.path("app"), c.ws, read.Secret)
		ro.rev("v1")
		ro.Must("init", "-no-color")
		if out := ro.Must("plan", "-no-color", "-detailed-exitcode"); !strings.Contains(out, "No changes.") {
			t.Errorf("a read token's plan:\n%s", out)
		}
		// Beside an apply's lock too.
		holder := newLock("ci-runner@build-7")
		if code, body := c.stateRequest(t, "LOCK", c.path("app"), c.ws, c.auto.Secret, "", holder.body()); code != 200 {
			t.Fatalf("LOCK: %d %s", code, body)
		}
		ro.Must("plan", "-no-color")
		ro.rev("v2")
		stderr, _ := c.refused(t, ro, "token_read_only", "apply", "-auto-approve", "-no-color", "-lock-timeout=0s")
		t.Logf("a read token's apply: %s", firstError(stderr))
		if code, body := c.stateRequest(t, "UNLOCK", c.path("app"), c.ws, c.auto.Secret, "", holder.body()); code != 200 {
			t.Fatalf("UNLOCK: %d %s", code, body)
		}
	})
}

// TestReadTokenPlansNewState: a read token's `tofu plan` of a state name
// that does not exist yet runs (it plans the creation) and leaves nothing
// behind: no state appears, not even an empty one; so does any plan in a
// suspended workspace, with the read-write token.
func TestReadTokenPlansNewState(t *testing.T) {
	eachStore(t, func(t *testing.T, databaseURL string) {
		c := startChecklist(t, databaseURL)
		read := c.automation(t, "read")
		stateNames := func() []string {
			var list struct{ States []struct{ Name string } }
			operator(t, c.srv, "GET", "/v1/api/states", "", http.StatusOK, &list)
			var names []string
			for _, s := range list.States {
				names = append(names, s.Name)
			}
			return names
		}
		plan := func(state, secret string) {
			t.Helper()
			d := c.withEnv(t, c.path(state), c.ws, secret)
			d.rev("v1")
			d.Must("init", "-no-color")
			out, stderr, code := d.Run("plan", "-no-color", "-detailed-exitcode")
			if code != 2 || !strings.Contains(out, "to add") {
				t.Fatalf("tofu plan of the new state %s: exit %d, want 2 (changes to add)\n%s\n%s", state, code, out, stderr)
			}
			if code, body := c.stateRequest(t, "GET", c.path(state), c.ws, c.auto.Secret, "", nil); code != http.StatusNotFound {
				t.Errorf("GET %s after the plan = %d %s, want 404", state, code, body)
			}
		}
		plan("fresh", read.Secret)
		operator(t, c.srv, "POST", "/v1/api/workspaces/"+c.ws+"/suspend", "", http.StatusOK, nil)
		plan("frozen", c.auto.Secret)
		plan("frozen-read", read.Secret)
		if names := stateNames(); len(names) != 0 {
			t.Errorf("states after the plans: %v, want none", names)
		}
	})
}

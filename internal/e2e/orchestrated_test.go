package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestOrchestratedDisjointApplies runs two orchestrated applies on
// disjoint files of one (exclusive) state at once: both hold their
// reservations at the same time, both commit, and the pair takes about as
// long as one.
func TestOrchestratedDisjointApplies(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wds := orchWorkdirs(t, srv, "disjoint", 2)

		var one time.Duration
		timed(t, "one orchestrated apply", func() {
			r := startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=v2", "--var", "sleep_a=4s")
			r.mustSucceed()
			one = r.took
		})
		var a, b *klRun
		pair := timed(t, "two orchestrated applies on disjoint files", func() {
			a = startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=v3", "--var", "sleep_a=4s")
			b = startKL(t, wds[1], "apply", "--orchestrated", "-f", "slow_b.tf", "--var", "b=v2", "--var", "sleep_b=4s")
			a.mustSucceed()
			b.mustSucceed()
		})
		t.Logf("TIMING %s pair/one: %.2f (goal: within 1.3)", t.Name(), pair.Seconds()/one.Seconds())
		for _, r := range []*klRun{a, b} {
			if strings.Contains(r.err.String(), "blocked by") {
				t.Errorf("an apply on a disjoint file waited:\n%s", r.output())
			}
		}
		if got := trigger(t, srv, "disjoint", "slow_a"); got != "v3" {
			t.Errorf("slow_a = %q, want v3", got)
		}
		if got := trigger(t, srv, "disjoint", "slow_b"); got != "v2" {
			t.Errorf("slow_b = %q, want v2", got)
		}
		rs := runs(t, srv, "disjoint", false)
		if len(rs) != 3 {
			t.Fatalf("%d runs, want 3: %+v", len(rs), rs)
		}
		x, y := rs[0], rs[1] // the pair, newest first
		for _, r := range rs {
			if r.Status != "succeeded" {
				t.Errorf("run %s is %s, want succeeded", r.ID, r.Status)
			}
		}
		if !x.Acquired.Before(y.Ended) || !y.Acquired.Before(x.Ended) {
			t.Errorf("the two runs did not hold their reservations at the same time: %s held %s–%s, %s held %s–%s",
				x.ID, x.Acquired, x.Ended, y.ID, y.Acquired, y.Ended)
		}
	})
}

// TestOrchestratedWait runs two orchestrated applies on one address: the
// second streams the wait block naming the first, a third with
// --wait-timeout 0 fails at once naming it, and the second applies once the
// first has committed.
func TestOrchestratedWait(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wds := orchWorkdirs(t, srv, "wait", 3)

		blocker := startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=blocker", "--var", "sleep_a=20s")
		held := waitActive(t, srv, "wait", "time_sleep.slow_a", blocker)

		fast := startKL(t, wds[2], "apply", "--orchestrated", "--target", "time_sleep.slow_a", "--var", "a=fast", "--wait-timeout", "0")
		if code := fast.wait(); code != 6 {
			t.Fatalf("--wait-timeout 0 on a held address: exit %d, want 6 (blocked)\n%s", code, fast.output())
		}
		for _, want := range []string{"blocked by 1 reservation(s)", "time_sleep.slow_a write held by", "kl apply abort --apply-id " + held.ID} {
			if !strings.Contains(fast.err.String(), want) {
				t.Errorf("fail-fast stderr does not say %q:\n%s", want, fast.err.String())
			}
		}

		waiter := startKL(t, wds[1], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=waiter", "--wait-timeout", "2m")
		waiter.waitStderr(`] blocked by 1 reservation(s) on "wait":`, time.Minute)
		blocker.mustSucceed()
		waiter.mustSucceed()
		stderr := waiter.err.String()
		short := strings.TrimPrefix(held.ID, "run_")[:6] + "…"
		for _, want := range []string{
			"[apply: waiting ",
			"  time_sleep.slow_a  write  held by " + held.Actor + " (apply " + short + ", lease ",
			"  retrying in ",
			"reservation conflict cleared",
			"planning again under the reservations",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("the waiter's stderr does not show %q:\n%s", want, stderr)
			}
		}
		if got := trigger(t, srv, "wait", "slow_a"); got != "waiter" {
			t.Errorf("slow_a = %q, want the waiter's value", got)
		}
		rs := runs(t, srv, "wait", false)
		if len(rs) != 3 {
			t.Fatalf("%d runs, want 3 (blocker, fail-fast, waiter): %+v", len(rs), rs)
		}
		w, f, b := rs[0], rs[1], rs[2]
		if b.Status != "succeeded" || w.Status != "succeeded" || f.Status != "failed" {
			t.Errorf("runs: blocker %s, fail-fast %s, waiter %s; want succeeded, failed, succeeded", b.Status, f.Status, w.Status)
		}
		if !w.Acquired.After(b.Ended) && !w.Acquired.Equal(b.Ended) {
			t.Errorf("the waiter took its reservations at %s, before the blocker released them at %s", w.Acquired, b.Ended)
		}
	})
}

// TestOrchestratedAbort aborts a running orchestrated apply, with the
// default lease (renewed every 5 minutes), while its local-exec
// provisioner sleeps, once as a provisioner that stops on SIGINT and once
// as one that ignores it: within 10 s its kl, its CLI and the
// provisioner's processes are gone, kl exits 7 (aborted) saying what
// became of the CLI's local state, nothing of it is committed, and the
// apply waiting behind it takes its reservations within 5 s and applies.
func TestOrchestratedAbort(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		for _, tc := range []struct {
			state, slowA string
			says         []string // what the aborted kl says, beside the abort
			errored      bool     // whether the CLI saved errored.tfstate
		}{
			{"abort", orchProvisionedA, []string{"it stopped on its own", "tofu state push errored.tfstate"}, true},
			// tofu stops, and the sleep it leaves behind is killed with
			// the group.
			{"abort-stubborn", orchStubbornA, []string{"it stopped on its own", "tofu state push errored.tfstate"}, true},
		} {
			t.Run(tc.state, func(t *testing.T) { testAbort(t, srv, tc.state, tc.slowA, tc.says, tc.errored) })
		}
	})
}

// testAbort is one case of TestOrchestratedAbort, on state name.
func testAbort(t *testing.T, srv *tofu.Server, name, slowA string, says []string, errored bool) {
	wds := orchWorkdirsWith(t, srv, name, 2, slowA)
	before := history(t, srv, name)
	pidFile := filepath.Join(wds[0].Dir, "provisioner.pid")
	os.Remove(pidFile) // the first apply's

	blocker := startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=aborted", "--var", "sleep_a=40")
	held := waitActive(t, srv, name, "terraform_data.slow_a", blocker)
	prov := waitPIDFile(t, pidFile, blocker)
	_, group, ok := procStat(prov)
	if !ok || len(groupMembers(t, group)) < 2 {
		t.Fatalf("the provisioner %d runs in no process group of the CLI's (group %d)", prov, group)
	}
	waiter := startKL(t, wds[1], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=after", "--wait-timeout", "3m")
	waiter.waitStderr("] blocked by 1 reservation(s)", time.Minute)

	abortedAt := time.Now()
	out := mustKL(t, "--server", srv.URL, "apply", "abort", "--apply-id", held.ID) // --latest would be the waiter's
	if !strings.Contains(out, "aborted apply run "+held.ID) || !strings.Contains(out, "stops the apply within seconds") {
		t.Errorf("kl apply abort says:\n%s", out)
	}
	deadline := abortedAt.Add(10 * time.Second)
	for left := groupMembers(t, group); len(left) > 0; left = groupMembers(t, group) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after kl apply abort, processes %v of the CLI's group (provisioner %d) still run", left, prov)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case <-blocker.done:
	case <-time.After(time.Until(deadline)):
		t.Fatalf("the aborted apply's kl still runs 10 s after kl apply abort\n%s", blocker.output())
	}
	t.Logf("TIMING %s kl apply abort to the CLI's group gone and kl exited: %s", t.Name(), time.Since(abortedAt).Round(time.Millisecond))
	if code := blocker.wait(); code != 7 {
		t.Fatalf("the aborted apply's kl: exit %d, want 7 (aborted)\n%s", code, blocker.output())
	}
	erroredFile := filepath.Join(wds[0].Dir, "errored.tfstate")
	for _, want := range append([]string{"is aborted: stopping the apply", "was aborted by", "nothing of it was committed"}, says...) {
		if !strings.Contains(blocker.err.String(), want) {
			t.Errorf("the aborted kl does not say %q:\n%s", want, blocker.err.String())
		}
	}
	if _, err := os.Stat(erroredFile); (err == nil) != errored || errored && !strings.Contains(blocker.err.String(), erroredFile) {
		t.Errorf("%s: %v; kl says:\n%s", erroredFile, err, blocker.err.String())
	}
	waiter.mustSucceed()
	if got := dataInput(t, srv, name, "slow_a"); got != "after" {
		t.Errorf("slow_a = %q, want the waiter's value", got)
	}
	after := history(t, srv, name)
	if len(after) != len(before)+1 {
		t.Errorf("%d versions after the abort and the waiter's apply, want %d: the aborted apply committed something\n%+v", len(after), len(before)+1, after)
	}
	var aborted, waited *applyRun
	rs := runs(t, srv, name, false)
	for i := range rs {
		if rs[i].ID == held.ID {
			aborted = &rs[i]
		} else {
			waited = &rs[i]
		}
	}
	if len(rs) != 2 || aborted == nil || aborted.Status != "aborted" || waited.Status != "succeeded" {
		t.Fatalf("runs: %+v, want the aborted run and the waiter's", rs)
	}
	if d := waited.Acquired.Sub(aborted.Ended); d > 5*time.Second {
		t.Errorf("the waiter took its reservations %s after the abort, want within 5 s", d)
	}
	again, errOut, code := kl(t, "--server", srv.URL, "apply", "abort", "--apply-id", held.ID)
	if code != 4 || !strings.Contains(errOut, "aborted") {
		t.Errorf("aborting an aborted run: exit %d, want 4\n%s%s", code, again, errOut)
	}
	_, errOut, code = kl(t, "--server", srv.URL, "apply", "abort", "--state", name, "--latest")
	if code != 3 || !strings.Contains(errOut, "no apply run in flight") {
		t.Errorf("--latest with none in flight: exit %d, want 3\n%s", code, errOut)
	}
}

// TestOrchestratedLeaseExpiry kills an orchestrated apply's kl: its
// reservations are freed when its short lease runs out, and a waiter goes
// on.
func TestOrchestratedLeaseExpiry(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wds := orchWorkdirs(t, srv, "expiry", 2)

		crashed := startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=crashed", "--var", "sleep_a=60s", "--lease", "3s")
		held := waitActive(t, srv, "expiry", "time_sleep.slow_a", crashed)
		crashed.waitStderr("applying 1 target", time.Minute)
		crashed.kill()

		waiter := startKL(t, wds[1], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=after", "--wait-timeout", "1m")
		waiter.mustSucceed()
		if got := trigger(t, srv, "expiry", "slow_a"); got != "after" {
			t.Errorf("slow_a = %q, want the waiter's value", got)
		}
		for _, r := range runs(t, srv, "expiry", false) {
			if r.ID == held.ID && r.Status != "expired" {
				t.Errorf("the killed run is %s, want expired", r.Status)
			}
		}
	})
}

// TestOrchestratedAndPlainLocks mixes plain applies with an orchestrated
// one: on an exclusive state a plain apply's lock gets 423 naming the
// orchestrated apply and succeeds with -lock-timeout; on an optimistic
// state a plain apply writing a reserved address gets 409 and writes
// nothing.
func TestOrchestratedAndPlainLocks(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		t.Run("exclusive", func(t *testing.T) {
			wds := orchWorkdirs(t, srv, "plain-exclusive", 2)
			orch := startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=orch", "--var", "sleep_a=12s")
			held := waitActive(t, srv, "plain-exclusive", "time_sleep.slow_a", orch)

			plain := []string{"apply", "-auto-approve", "-no-color", "-var", "a=orch", "-var", "b=plain"}
			_, stderr, code := wds[1].Run(append(plain, "-lock-timeout=0s")...)
			if code == 0 || !strings.Contains(stderr, held.ID) || !strings.Contains(stderr, "kl apply --orchestrated") {
				t.Fatalf("a plain apply during an orchestrated one: exit %d, want a lock error naming run %s\n%s", code, held.ID, stderr)
			}
			_, stderr, code = wds[1].Run(append(plain, "-lock-timeout=2m")...)
			if code != 0 {
				t.Fatalf("a plain apply with -lock-timeout: exit %d\n%s", code, stderr)
			}
			orch.mustSucceed()
			if a, b := trigger(t, srv, "plain-exclusive", "slow_a"), trigger(t, srv, "plain-exclusive", "slow_b"); a != "orch" || b != "plain" {
				t.Errorf("slow_a = %q, slow_b = %q; want orch, plain", a, b)
			}
		})
		t.Run("optimistic", func(t *testing.T) {
			wds := orchWorkdirs(t, srv, "plain-optimistic", 2)
			mustKL(t, "--server", srv.URL, "state", "config", "plain-optimistic", "--no-exclusive-locks")
			before := len(history(t, srv, "plain-optimistic"))
			orch := startKL(t, wds[0], "apply", "--orchestrated", "-f", "slow_a.tf", "--var", "a=orch", "--var", "sleep_a=15s")
			waitActive(t, srv, "plain-optimistic", "time_sleep.slow_a", orch)

			_, stderr, code := wds[1].Run("apply", "-auto-approve", "-no-color", "-var", "a=plain")
			if code == 0 || !strings.Contains(stderr, "409") {
				t.Fatalf("a plain apply writing a reserved address: exit %d, want a refused write (409)\n%s", code, stderr)
			}
			if got := len(history(t, srv, "plain-optimistic")); got != before {
				t.Errorf("the refused plain apply wrote: %d versions, want %d", got, before)
			}
			orch.mustSucceed()
			if got := trigger(t, srv, "plain-optimistic", "slow_a"); got != "orch" {
				t.Errorf("slow_a = %q, want orch", got)
			}
		})
	})
}

// TestPlanSpec plans with kl plan, refuses a scope that writes outside
// itself, and refuses to apply a spec whose writes changed since its plan.
func TestPlanSpec(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wds := orchWorkdirs(t, srv, "spec", 1)
		wd := wds[0]

		r := startKL(t, wd, "plan", "-f", "slow_a.tf", "--var", "a=v2", "-o", "a.json")
		r.mustSucceed()
		for _, want := range []string{"1 to replace; reservations: 1 write, 0 read", "plan spec: a.json"} {
			if !strings.Contains(r.out.String(), want) {
				t.Errorf("kl plan does not print %q:\n%s", want, r.output())
			}
		}
		spec := wd.ReadFile("a.json")
		for _, want := range []string{`"format": "kilolock-plan-spec"`, `"state": "spec"`, `"address": "time_sleep.slow_a"`, `"serial": 1`} {
			if !strings.Contains(spec, want) {
				t.Errorf("the plan spec has no %s:\n%s", want, spec)
			}
		}

		// slow_b depends on nothing in slow_a.tf, but a target that pulls
		// in a change the scope does not own is refused.
		wd.WriteFile("slow_b.tf", strings.Replace(orchSlowB, "{ v = var.b }", "{ v = var.b, a = time_sleep.slow_a.id }", 1))
		r = startKL(t, wd, "plan", "-f", "slow_b.tf", "--var", "a=v2", "--var", "b=v2", "-o", "b.json")
		if code := r.wait(); code != 4 || !strings.Contains(r.err.String(), "time_sleep.slow_a") || !strings.Contains(r.err.String(), "slow_a.tf") {
			t.Errorf("a plan writing outside its scope: exit %d, want 4 naming time_sleep.slow_a and slow_a.tf\n%s", code, r.output())
		}
		wd.WriteFile("slow_b.tf", orchSlowB)

		// Someone else changes slow_a: the saved spec is stale.
		wd.Must("apply", "-auto-approve", "-no-color", "-var", "a=other")
		r = startKL(t, wd, "apply", "--orchestrated", "--plan-spec", "a.json")
		if code := r.wait(); code != 4 || !strings.Contains(r.err.String(), "time_sleep.slow_a") || !strings.Contains(r.err.String(), "changed since the plan") {
			t.Errorf("applying a stale spec: exit %d, want 4 naming time_sleep.slow_a\n%s", code, r.output())
		}
		if got := trigger(t, srv, "spec", "slow_a"); got != "other" {
			t.Errorf("slow_a = %q after a refused stale spec, want other", got)
		}

		// A fresh spec applies.
		startKL(t, wd, "plan", "-f", "slow_a.tf", "--var", "a=v3", "-o", "a.json").mustSucceed()
		startKL(t, wd, "apply", "--orchestrated", "--plan-spec", "a.json").mustSucceed()
		if got := trigger(t, srv, "spec", "slow_a"); got != "v3" {
			t.Errorf("slow_a = %q after applying the spec, want v3", got)
		}
		out := mustKL(t, "--server", srv.URL, "status", "spec")
		if strings.Contains(out, "APPLY RUN") {
			t.Errorf("kl status shows runs in flight after every run ended:\n%s", out)
		}

		// Without --orchestrated, kl apply is the scoped CLI apply: no run.
		startKL(t, wd, "apply", "-f", "slow_b.tf", "--var", "b=plain").mustSucceed()
		if got := trigger(t, srv, "spec", "slow_b"); got != "plain" {
			t.Errorf("slow_b = %q after a plain kl apply, want plain", got)
		}
		if n := len(runs(t, srv, "spec", false)); n != 1 {
			t.Errorf("%d apply runs after a plain kl apply, want the 1 orchestrated one", n)
		}
	})
}

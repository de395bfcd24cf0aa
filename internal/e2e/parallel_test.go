package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// Parallel applies on one state (issue 3). Each directory changes its own
// resources and passes every other input pinned to what the state holds;
// creating a changed resource sleeps, so an apply takes about its sleep.
// On an optimistic state the applies overlap and are merged at commit;
// on an exclusive one they take turns.
//
// The tests that compare wall times (two, eight, exclusive) do not call
// t.Parallel: they run one at a time, before the parallel tests of this
// package start, so the machine is as quiet as it gets when they measure.

// Sleeps of the changed resources, in seconds: long enough that the lock
// behaviour, not tofu's start-up, sets the wall time.
const (
	pairSleep    = 10
	eightSleep   = 15
	overlapSleep = 5
)

// Bounds on the wall time of applies started together, as a multiple of
// one apply alone.
const (
	maxPairRatio      = 1.2
	maxEightRatio     = 1.3
	minExclusiveRatio = 1.8 // two applies that take turns
)

// TestParallelTwoDirs: two working directories apply at once to one
// optimistic state, each changing its own resource. Both succeed, the state
// holds both changes, and the pair takes about as long as one apply.
func TestParallelTwoDirs(t *testing.T) {
	skipShort(t)
	tofu.Binary(t)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			const state = "two-dirs"
			srv := setup(t, s.url(t))
			stack := slowResources(2)
			cur := seedStack(t, srv, state, stack...)
			setOptimistic(t, srv, state)
			dirs := stackDirs(t, srv, state, 2, stack...)

			cur = cur.with("slow_a", "alone")
			alone := timed(t, "one apply alone", func() { dirs[0].Must(cur.applyArgs(pairSleep)...) })

			want, wall := disjointPair(t, srv, state, dirs, cur, "v2", "v2", pairSleep)
			if got := parseInputs(t, []byte(dirs[1].Must("state", "pull"))); !maps.Equal(got, want) {
				t.Errorf("tofu state pull in dir B holds %v, want %v", got, want)
			}
			r := ratio(wall, alone)
			t.Logf("TIMING %s ratio pair/alone: %.2f (limit %.1f)", t.Name(), r, maxPairRatio)
			if r >= maxPairRatio {
				t.Errorf("two applies at once took %s, %.2f× one apply alone (%s): want < %.1f×", wall.Round(time.Millisecond), r, alone.Round(time.Millisecond), maxPairRatio)
			}
			// The one that committed second was merged onto the first.
			h := versions(t, srv, state)
			logVersions(t, h[:3])
			if h[0].Source != "apply" || !h[0].Merged || h[1].Source != "apply" || h[1].Merged || h[0].LockID == h[1].LockID {
				t.Errorf("the pair's versions are %s (merged %v) by %s and %s (merged %v) by %s, want two applies by two locks, the second merged", h[1].Source, h[1].Merged, h[1].LockID, h[0].Source, h[0].Merged, h[0].LockID)
			}
		})
	}
}

// disjointPair runs dirs[0], replacing slow_a with a, and dirs[1],
// replacing slow_b with b, at once from inputs cur, each created in sleep
// seconds. Both must succeed, each replacing exactly its own resource, and
// the state must hold both changes afterwards: it returns those inputs and
// the pair's wall time.
func disjointPair(t *testing.T, srv *tofu.Server, state string, dirs []*tofu.Workdir, cur inputs, a, b string, sleep int) (inputs, time.Duration) {
	t.Helper()
	outs, wall := runTogether(t, "two dirs at once",
		run{"dir A (slow_a)", dirs[0], cur.with("slow_a", a).applyArgs(sleep)},
		run{"dir B (slow_b)", dirs[1], cur.with("slow_b", b).applyArgs(sleep)},
	)
	mustSucceed(t, outs)
	for _, o := range outs {
		if !strings.Contains(o.stdout, "Apply complete! Resources: 1 added, 0 changed, 1 destroyed.") {
			t.Errorf("%s did not replace exactly its own resource:\n%s", o.name, o.stdout)
		}
	}
	want := cur.with("slow_a", a).with("slow_b", b)
	if got := stateInputs(t, srv, state); !maps.Equal(got, want) {
		t.Errorf("state after both applies holds %v, want %v", got, want)
	}
	return want, wall
}

// TestParallelEightDirs: eight directories apply at once, each changing one
// of eight resources; all land in about the time of one apply.
func TestParallelEightDirs(t *testing.T) {
	skipShort(t)
	tofu.Binary(t)
	const (
		state = "eight-dirs"
		n     = 8
	)
	srv := setup(t, sqliteURL(t))
	stack := slowResources(n)
	cur := seedStack(t, srv, state, stack...)
	setOptimistic(t, srv, state)
	dirs := stackDirs(t, srv, state, n, stack...)

	cur = cur.with(stack[0].name, "alone")
	alone := timed(t, "one apply alone", func() { dirs[0].Must(cur.applyArgs(eightSleep)...) })

	runs := make([]run, n)
	want := inputs{}
	for i, r := range stack {
		runs[i] = run{fmt.Sprintf("dir %d (%s)", i+1, r.name), dirs[i], cur.with(r.name, "v2").applyArgs(eightSleep)}
		want[r.name] = "v2"
	}
	outs, wall := runTogether(t, "eight dirs at once", runs...)
	mustSucceed(t, outs)
	if got := stateInputs(t, srv, state); !maps.Equal(got, want) {
		t.Errorf("state after eight applies holds %v, want %v", got, want)
	}
	r := ratio(wall, alone)
	t.Logf("TIMING %s ratio eight/alone: %.2f (limit %.1f)", t.Name(), r, maxEightRatio)
	if r >= maxEightRatio {
		t.Errorf("eight applies at once took %s, %.2f× one apply alone (%s): want < %.1f×", wall.Round(time.Millisecond), r, alone.Round(time.Millisecond), maxEightRatio)
	}
	h := versions(t, srv, state)
	logVersions(t, h[:n])
	locks := map[string]bool{}
	merges := 0
	for _, v := range h[:n] {
		locks[v.LockID] = true
		if v.Merged {
			merges++
		}
	}
	if len(locks) != n || merges < n-1 {
		t.Errorf("the last %d versions are by %d locks with %d merges, want %d locks and at least %d merges", n, len(locks), merges, n, n-1)
	}
}

// TestParallelOverlap: two directories change the same resource to
// different values at once. The first to commit wins; the other gets 409,
// keeps its result in errored.tfstate, and kl conflicts says why.
func TestParallelOverlap(t *testing.T) {
	t.Parallel()
	skipShort(t)
	tofu.Binary(t)
	const state = "overlap"
	srv := setup(t, sqliteURL(t))
	stack := slowResources(2)
	cur := seedStack(t, srv, state, stack...)
	setOptimistic(t, srv, state)
	dirs := stackDirs(t, srv, state, 2, stack...)

	values := []string{"from-a", "from-b"}
	outs, _ := runTogether(t, "both change slow_a",
		run{values[0], dirs[0], cur.with("slow_a", values[0]).applyArgs(overlapSleep)},
		run{values[1], dirs[1], cur.with("slow_a", values[1]).applyArgs(overlapSleep)},
	)
	var winner, loser *outcome
	for i := range outs {
		if outs[i].code == 0 {
			winner = &outs[i]
		} else {
			loser = &outs[i]
		}
	}
	if winner == nil || loser == nil {
		t.Fatalf("want exactly one apply to succeed: exits %d and %d\n%s\n%s", outs[0].code, outs[1].code, outs[0].stderr, outs[1].stderr)
	}
	t.Logf("winner %s; what tofu of the loser (%s) printed on stderr:\n%s", winner.name, loser.name, loser.stderr)
	if !strings.Contains(loser.stderr, "HTTP error: 409") {
		t.Errorf("the loser's stderr does not show the 409:\n%s", loser.stderr)
	}
	errored := filepath.Join(loser.wd.Dir, "errored.tfstate")
	if _, err := os.Stat(errored); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the loser's directory has no errored.tfstate")
	}
	if got := parseInputs(t, []byte(loser.wd.ReadFile("errored.tfstate")))["slow_a"]; got != loser.name {
		t.Errorf("errored.tfstate holds slow_a = %q, want the loser's %q", got, loser.name)
	}
	if got := stateInputs(t, srv, state)["slow_a"]; got != winner.name {
		t.Errorf("state holds slow_a = %q, want the winner's %q", got, winner.name)
	}

	// What the loser runs to find out why.
	t.Logf("kl conflicts %s:\n%s", state, mustKL(t, "--server", srv.URL, "conflicts", state))
	out := mustKL(t, "--server", srv.URL, "conflicts", state, "--json")
	t.Logf("kl conflicts %s --json:\n%s", state, out)
	var c struct {
		Rejections []struct {
			LockID    string   `json:"lock_id"`
			Reason    string   `json:"reason"`
			Addresses []string `json:"conflicting_addresses"`
			Winner    *struct {
				LockID  string `json:"lock_id"`
				Version int64  `json:"version"`
			} `json:"winner"`
		} `json:"rejections"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("kl conflicts --json: %v\n%s", err, out)
	}
	if len(c.Rejections) != 1 {
		t.Fatalf("kl conflicts --json lists %d rejections, want 1:\n%s", len(c.Rejections), out)
	}
	rej := c.Rejections[0]
	if rej.Reason != "conflict" || !slices.Equal(rej.Addresses, []string{"terraform_data.slow_a"}) {
		t.Errorf("rejection is %q on %q, want conflict on [terraform_data.slow_a]", rej.Reason, rej.Addresses)
	}
	if h := versions(t, srv, state); rej.Winner == nil || rej.Winner.LockID != h[0].LockID || rej.Winner.Version != h[0].Number || rej.LockID == h[0].LockID {
		t.Errorf("rejection names winner %+v and loser lock %s; the current version %d is by lock %s", rej.Winner, rej.LockID, h[0].Number, h[0].LockID)
	}
	if line := logLine(srv.Log(), "commit rejected"); !strings.Contains(line, "terraform_data.slow_a") {
		t.Errorf("kld's log line of the rejection does not name terraform_data.slow_a: %q", line)
	} else {
		t.Logf("kld logged: %s", line)
	}

	// Applying again, as the hint says, starts from the winner's state.
	loser.wd.Must(cur.with("slow_a", loser.name).applyArgs(0)...)
	if got := stateInputs(t, srv, state)["slow_a"]; got != loser.name {
		t.Errorf("after the loser applies again the state holds slow_a = %q, want %q", got, loser.name)
	}
}

// TestParallelLongApply: an apply of about 50 s, which OpenTofu checkpoints
// (POSTs under its lock every 20 s), runs beside another directory that
// commits twice meanwhile. The checkpoints never conflict with each other,
// everyone succeeds and the state holds everything.
func TestParallelLongApply(t *testing.T) {
	t.Parallel()
	skipShort(t)
	tofu.Binary(t)
	const state = "long-apply"
	srv := setup(t, sqliteURL(t))
	// A chain, so objects land in the state at ~5, ~25 and ~50 s: the
	// checkpoint at ~25 s holds long_1 and long_2, the one at ~50 s adds
	// long_3. (Independent resources would all be written at the start,
	// before their provisioners run, leaving nothing for a second
	// checkpoint.)
	stack := []slowResource{
		{name: "long_1", weight: 5},
		{name: "long_2", weight: 20, dependsOn: "long_1"},
		{name: "long_3", weight: 25, dependsOn: "long_2"},
		{name: "other"},
	}
	cur := seedStack(t, srv, state, stack...)
	setOptimistic(t, srv, state)
	dirs := stackDirs(t, srv, state, 2, stack...)
	long, other := dirs[0], dirs[1]

	longArgs := cur.with("long_1", "v2").with("long_2", "v2").with("long_3", "v2").applyArgs(1)
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		o := outcome{run: run{"long", long, longArgs}}
		o.stdout, o.stderr, o.code = long.Run(longArgs...)
		o.took = time.Since(start)
		done <- o
	}()
	running := func() bool {
		select {
		case o := <-done:
			done <- o
			return false
		default:
			return true
		}
	}
	longLock := waitLocks(t, srv, state, 1, 30*time.Second)[0]
	t.Logf("the long apply holds lock %s", longLock)

	// The other directory applies its whole configuration before the
	// first checkpoint: the long apply's resources are as seeded then.
	other.Must(cur.with("other", "v2").applyArgs(0)...)
	t.Logf("TIMING %s other directory's first apply done at %s", t.Name(), time.Since(start).Round(time.Millisecond))

	if !waitFor(90*time.Second, func() bool { return stateInputs(t, srv, state)["long_2"] == "v2" }) {
		t.Fatalf("no checkpoint of the long apply after %s", time.Since(start).Round(time.Second))
	}
	t.Logf("TIMING %s first checkpoint of the long apply seen at %s: %v", t.Name(), time.Since(start).Round(time.Millisecond), stateInputs(t, srv, state))
	// Between checkpoints the state holds the long apply's partial
	// result (long_3 is destroyed and not yet created again), so the
	// second write targets only the other directory's resource.
	other.Must(cur.with("other", "v3").applyArgs(0, "-target=terraform_data.other")...)
	t.Logf("TIMING %s other directory's second apply (-target) done at %s", t.Name(), time.Since(start).Round(time.Millisecond))
	if !running() {
		t.Errorf("the long apply ended before the other directory's second write: they did not overlap")
	}

	o := <-done
	t.Logf("TIMING %s long apply: %s (exit %d)", t.Name(), o.took.Round(time.Millisecond), o.code)
	if o.code != 0 {
		t.Fatalf("long apply: exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if o.took < 45*time.Second {
		t.Errorf("the long apply took %s, want more than 45 s (two checkpoints)", o.took.Round(time.Millisecond))
	}
	want := inputs{"long_1": "v2", "long_2": "v2", "long_3": "v2", "other": "v3"}
	if got := stateInputs(t, srv, state); !maps.Equal(got, want) {
		t.Errorf("final state holds %v, want %v", got, want)
	}

	h := versions(t, srv, state)
	logVersions(t, h)
	byLong := 0
	for _, v := range h {
		if v.LockID == longLock {
			byLong++
		}
	}
	if byLong < 2 {
		t.Errorf("lock %s of the long apply wrote %d versions, want at least 2 (a checkpoint and the final state)", longLock, byLong)
	}
	if out := mustKL(t, "--server", srv.URL, "conflicts", state); !strings.Contains(out, "no rejected commits") {
		t.Errorf("kl conflicts after the long apply:\n%s", out)
	}
}

// TestParallelExclusive: on a state left exclusive the same pair as
// TestParallelTwoDirs takes turns: with -lock-timeout the second waits and
// then applies; without one it fails at once, naming the holder.
func TestParallelExclusive(t *testing.T) {
	skipShort(t)
	tofu.Binary(t)
	const state = "exclusive"
	srv := setup(t, sqliteURL(t))
	stack := slowResources(2)
	cur := seedStack(t, srv, state, stack...)
	if mode := stateStatus(t, srv, state).LockMode; mode != "exclusive" {
		t.Fatalf("lock mode of a new state: %q, want exclusive", mode)
	}
	dirs := stackDirs(t, srv, state, 2, stack...)

	cur = cur.with("slow_a", "alone")
	alone := timed(t, "one apply alone", func() { dirs[0].Must(cur.applyArgs(pairSleep)...) })

	cur = cur.with("slow_a", "v2")
	outs, wall := runTogether(t, "two dirs at once, -lock-timeout=60s",
		run{"dir A (slow_a)", dirs[0], cur.applyArgs(pairSleep, "-lock-timeout=60s")},
		run{"dir B (slow_b)", dirs[1], cur.with("slow_b", "v2").applyArgs(pairSleep, "-lock-timeout=60s")},
	)
	mustSucceed(t, outs)
	// Taking turns means the second apply plans against the first one's
	// result with its own configuration, which pins the other resource at
	// v1: the state ends as the configuration of whichever ran last.
	last := cur // dir A's configuration
	if outs[1].took > outs[0].took {
		last = cur.with("slow_b", "v2")
	}
	if got := stateInputs(t, srv, state); !maps.Equal(got, last) {
		t.Errorf("state after both applies holds %v, want the configuration of the apply that ran last: %v", got, last)
	}
	cur = last
	r := ratio(wall, alone)
	t.Logf("TIMING %s ratio pair/alone: %.2f (want ≥ %.1f)", t.Name(), r, minExclusiveRatio)
	if r < minExclusiveRatio || wall < 2*pairSleep*time.Second {
		t.Errorf("two applies on an exclusive state took %s, %.2f× one apply (%s): they did not take turns", wall.Round(time.Millisecond), r, alone.Round(time.Millisecond))
	}
	h := versions(t, srv, state)
	logVersions(t, h[:2])
	if h[0].Source != "apply" || h[1].Source != "apply" {
		t.Errorf("versions on an exclusive state: %s then %s, want two plain applies", h[1].Source, h[0].Source)
	}

	// Without -lock-timeout the second fails at once with the holder.
	holder, done := startHolder(t, srv, state, dirs[0], cur.with("slow_a", "v3").applyArgs(pairSleep))
	var stdout, stderr string
	var code int
	took := timed(t, "second apply without -lock-timeout", func() {
		stdout, stderr, code = dirs[1].Run(cur.with("slow_b", "v3").applyArgs(pairSleep)...)
	})
	t.Logf("what tofu printed on stderr:\n%s", stderr)
	if code == 0 {
		t.Errorf("apply without -lock-timeout succeeded while %s holds the lock:\n%s", holder, stdout)
	}
	if took > pairSleep*time.Second/2 {
		t.Errorf("apply without -lock-timeout took %s to fail, want it at once", took.Round(time.Millisecond))
	}
	for _, want := range []string{"Error acquiring the state lock", holder} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not show %q", want)
		}
	}
	if !srv.WaitLog(t.Context(), "method=LOCK path=/v1/states/"+state+" status=423", 5*time.Second) {
		t.Errorf("kld did not log a LOCK answered 423")
	}
	if o := <-done; o.code != 0 {
		t.Fatalf("the holder's apply: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	if got := stateInputs(t, srv, state); !maps.Equal(got, cur.with("slow_a", "v3")) {
		t.Errorf("state holds %v, want %v", got, cur.with("slow_a", "v3"))
	}
}

// logLine returns the first line of log that contains substr, or "".
func logLine(log, substr string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, substr) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

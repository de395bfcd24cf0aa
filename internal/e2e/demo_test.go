package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// The demo (examples/big-state/README.md, the 8-minute script of issue
// 14), replayed with the scripts its make targets run, the real CLI and kl,
// on both stores. The herd is small in CI; KL_E2E_DEMO_SCALE=10000 runs it
// at the demo's size (and KL_E2E_DEMO_SLEEP the slow resources' seconds).
// Each beat logs a TIMING line.

// Defaults of the CI run: a herd of demoCIScale resources, slow resources
// of demoCISleep seconds.
const (
	demoCIScale = 200
	demoCISleep = 10
)

// Bounds on what the demo shows, checked on every run: the pair of plain
// applies overlaps (two that took turns would take twice as long; the goal
// is 1.3× on this machine, logged), and a large apply or destroy may
// checkpoint but never conflicts with itself.
const demoMaxPairRatio = 1.8

// demoPace is what the 5A/5B runs add: two resources that take 23 s and
// 26 s to create and to destroy. The first ends past the CLI's 20 s
// between checkpoints, so it checkpoints; the second ends after it, so
// the last write is another (the CLI skips a write of what it wrote).
const demoPace = `
resource "time_sleep" "pace" {
  count            = 2
  create_duration  = "${23 + 3 * count.index}s"
  destroy_duration = "${23 + 3 * count.index}s"
}
`

func TestDemo(t *testing.T) {
	skipShort(t)
	tofu.Binary(t)
	scale := envInt(t, "KL_E2E_DEMO_SCALE", demoCIScale)
	sleep := envInt(t, "KL_E2E_DEMO_SLEEP", demoCISleep)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { replayDemo(t, s.url(t), scale, sleep) })
	}
}

func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func replayDemo(t *testing.T, databaseURL string, scale, sleep int) {
	srv := setup(t, databaseURL)
	d := newDemo(t, srv, tofu.OpenTofu, scale, sleep)
	instances := strconv.Itoa(scale + 2)

	// Setup: make demo-warm, twice (the second a restore of the file the
	// first wrote), then a plan that shows no changes, and demo-status.
	timed(t, "demo-warm (first: writes the file)", func() { d.script(t, nil, "demo-warm.sh") })
	out := ""
	timed(t, "demo-warm", func() { out = d.script(t, nil, "demo-warm.sh") })
	if !strings.Contains(out, "demo-warm: restored") {
		t.Fatalf("demo-warm said:\n%s", out)
	}
	plan := d.prepare(t, "plan")
	timed(t, "tofu plan -refresh=false after demo-warm", func() {
		out = d.tf(t, plan, 0, "plan", "-refresh=false", "-detailed-exitcode")
	})
	if !strings.Contains(out, "No changes.") {
		t.Errorf("plan after demo-warm shows changes:\n%s", tail(out, 20))
	}
	status := d.kl(t, "status", "big-state")
	for _, want := range []string{"lock mode:  exclusive", "instances:  " + instances, "locked:     no"} {
		if !strings.Contains(status, want) {
			t.Errorf("demo-status lacks %q:\n%s", want, status)
		}
	}

	// The parallel beat, plain CLIs on an optimistic state: one apply
	// alone, then both terminals at once.
	d.kl(t, "state", "config", "big-state", "--exclusive-locks=false")
	mark := len(srv.Log())
	var alone time.Duration
	alone = timed(t, "one apply alone (parallel-tf-a)", func() { out = d.script(t, nil, "parallel-tf.sh", "a") })
	if !strings.Contains(out, "Apply complete! Resources: 1 added, 0 changed, 1 destroyed.") {
		t.Fatalf("parallel-tf-a did not replace exactly slow_a:\n%s", tail(out, 20))
	}
	atTwo := d.slowVersion(t, "a") // version @2's
	d.backendShare(t, srv, mark, alone)
	_, pair := d.parallelPair(t)
	ratio := pair.Seconds() / alone.Seconds()
	t.Logf("TIMING %s pair/alone ratio: %.2f (goal 1.3)", t.Name(), ratio)
	if ratio > demoMaxPairRatio {
		t.Errorf("the pair took %.2f× one apply: the applies took turns", ratio)
	}
	if a, b := d.slowVersion(t, "a"), d.slowVersion(t, "b"); !strings.HasPrefix(a, "a-") || !strings.HasPrefix(b, "b-") {
		t.Errorf("after the pair slow_a = %q, slow_b = %q; want both terminals' versions", a, b)
	}

	// History: the * marker, the three applies newest first over the
	// restore (the second demo-warm wrote nothing), serials rising. Of the
	// pair, the write that committed second was merged onto the first: an
	// apply too, its changes saying so.
	hist := d.kl(t, "history", "big-state", "--limit=5")
	rows := historyRows(hist)
	if len(rows) != 4 || !strings.HasPrefix(rows[0][0], "*") || rows[3][3] != "import" {
		t.Fatalf("kl history --limit=5:\n%s", hist)
	}
	for i, r := range rows[:3] {
		if r[3] != "apply" {
			t.Errorf("row %d is %s, want one of the three applies:\n%s", i, r[3], hist)
		}
		if serialOf(t, r) <= serialOf(t, rows[i+1]) {
			t.Errorf("serials do not rise:\n%s", hist)
		}
	}
	if merged(rows[0]) == merged(rows[1]) || merged(rows[2]) {
		t.Errorf("want one of the pair merged onto the other:\n%s", hist)
	}

	// The orchestrated pair (make parallel-demo-a / -b) on the same
	// configuration; then one with KL_LOG_LEVEL=warn, which keeps kl's
	// informational lines to itself.
	d.orchestratedPair(t)
	out = d.script(t, []string{"KL_LOG_LEVEL=warn"}, "orchestrated.sh", "quiet", "--target", "time_sleep.slow_a", "--var", "slow_a_version=quiet")
	if strings.Contains(out, "kl: ") || !strings.Contains(out, "exited 0") {
		t.Errorf("KL_LOG_LEVEL=warn: kl still says what it does, or failed:\n%s", tail(out, 20))
	}
	if got := d.slowVersion(t, "a"); got != "quiet" {
		t.Errorf("slow_a = %q after the quiet apply", got)
	}

	// Rollback to @2 (the first apply): a dry run with the orphan warning,
	// then applied, and history's new top row.
	out = d.kl(t, "rollback", "big-state", "--to=@2")
	for _, want := range []string{"dry run", "orphans in the cloud", "time_sleep.slow_a", "time_sleep.slow_b"} {
		if !strings.Contains(strings.ToLower(out), strings.ToLower(want)) {
			t.Errorf("rollback dry run lacks %q:\n%s", want, out)
		}
	}
	if got := d.slowVersion(t, "a"); got != "quiet" {
		t.Errorf("the dry run changed slow_a to %q", got)
	}
	d.kl(t, "rollback", "big-state", "--to=@2", "--apply", "--yes")
	rows = historyRows(d.kl(t, "history", "big-state", "--limit=3"))
	if len(rows) != 3 || !strings.HasPrefix(rows[0][0], "*") || rows[0][3] != "rollback" {
		t.Errorf("history after the rollback: %v", rows)
	}
	if a, b := d.slowVersion(t, "a"), d.slowVersion(t, "b"); a != atTwo || b != "v1" {
		t.Errorf("after rolling back to @2 slow_a = %q, slow_b = %q; want %q, v1", a, b, atTwo)
	}
	// The unchanged backend configuration still plans on the rolled-back
	// state: slow_a is replaced back to the configuration's v1.
	out = d.tf(t, plan, 2, "plan", "-refresh=false", "-detailed-exitcode")
	if !strings.Contains(out, "Plan: 1 to add, 0 to change, 1 to destroy.") {
		t.Errorf("plan after the rollback:\n%s", tail(out, 5))
	}

	// TF_BIN named every CLI run above (a wrapper on PATH).
	if n := d.tfRuns(t); n < 6 {
		t.Errorf("TF_BIN ran %d times, want every script's CLI runs", n)
	}

	// 5A/5B: a large destroy and a large apply of the herd, in each mode,
	// checkpoint under one lock and never conflict with themselves. The
	// CLI persists the state at most every 20 s while it works: pace
	// (demoPace) makes even CI's small herd checkpoint once before the end.
	if err := os.WriteFile(filepath.Join(plan, "pace.tf"), []byte(demoPace), 0o644); err != nil {
		t.Fatal(err)
	}
	d.tf(t, plan, 0, "apply", "-auto-approve", "-refresh=false")
	for _, mode := range []struct {
		name      string
		exclusive string
	}{{"optimistic", "false"}, {"exclusive", "true"}} {
		d.kl(t, "state", "config", "big-state", "--exclusive-locks="+mode.exclusive)
		d.checkpoints(t, srv, plan, mode.name+" destroy (5B)", "destroy", "-auto-approve", "-refresh=false")
		d.checkpoints(t, srv, plan, mode.name+" apply (5A)", "apply", "-auto-approve", "-refresh=false")
	}
	if got := d.kl(t, "status", "big-state"); !strings.Contains(got, "instances:  "+strconv.Itoa(scale+4)) {
		t.Errorf("after 5A the state does not hold the herd again:\n%s", got)
	}
}

// demo is one replay's environment: the scripts' variables and where the
// CLI runs.
type demo struct {
	root, dir string
	env       []string
	tfBin     string // the wrapper TF_BIN names
	tfLog     string // one line per CLI run through TF_BIN
}

// newDemo returns the environment of a replay with the CLI cli.
func newDemo(t *testing.T, srv *tofu.Server, cli tofu.Kind, scale, sleep int) *demo {
	t.Helper()
	d := &demo{root: tofu.ModuleRoot(t), dir: t.TempDir()}
	// TF_BIN is a name on PATH: a wrapper that notes each run. For
	// Terraform it is TF_BIN=terraform, as the README gives it.
	bin := filepath.Join(d.dir, "bin")
	d.tfLog = filepath.Join(d.dir, "tf-runs.log")
	wrapper := fmt.Sprintf("#!/bin/sh\necho \"$*\" >>%q\nexec %q \"$@\"\n", d.tfLog, cli.Binary(t))
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "demo-tf"
	if cli == tofu.Terraform {
		name = "terraform"
	}
	d.tfBin = filepath.Join(bin, name)
	if err := os.WriteFile(d.tfBin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	d.env = append(tofu.CleanEnv("KL_", "TF_", "PATH="),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TF_BIN="+name,
		"KL="+tofu.BuildKL(t),
		"KL_SERVER="+srv.URL,
		"TF_CLI_CONFIG_FILE="+cli.CLIConfigFile(t),
		"TF_VAR_herd_size="+strconv.Itoa(scale),
		"TF_VAR_slow_seconds="+strconv.Itoa(sleep),
		"BIG_STATE_CACHE="+filepath.Join(d.dir, "cache"),
		"PARALLEL_TF_DIR="+d.dir,
		"ORCHESTRATED_DIR="+filepath.Join(d.dir, "orchestrated"),
		"NO_COLOR=1",
	)
	return d
}

// script runs examples/big-state/NAME with args and extra environment,
// and returns its output; it fails t unless the script exits 0.
func (d *demo) script(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(d.root, "examples", "big-state", name)}, args...)...)
	cmd.Env = append(append([]string{}, d.env...), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(out.String(), 30))
	}
	return out.String()
}

// parallelPair runs both terminals of the parallel beat at once
// (parallel-tf.sh a and b) and returns their outputs and the pair's wall
// time; it fails t unless each replaced exactly its slow resource.
func (d *demo) parallelPair(t *testing.T) ([]string, time.Duration) {
	t.Helper()
	outs := make([]string, 2)
	pair := timed(t, "the pair in parallel (parallel-tf-a and -b)", func() {
		var wg sync.WaitGroup
		for i, side := range []string{"a", "b"} {
			wg.Go(func() { outs[i] = d.script(t, nil, "parallel-tf.sh", side) })
		}
		wg.Wait()
	})
	for i, o := range outs {
		if !strings.Contains(o, "Apply complete! Resources: 1 added, 0 changed, 1 destroyed.") {
			t.Errorf("terminal %c did not replace exactly its slow resource:\n%s", 'a'+i, tail(o, 20))
		}
	}
	return outs, pair
}

// orchestratedPair runs both terminals of the reservation demo at once
// (orchestrated.sh a and b, each --target its slow resource and a new
// version orch-SIDE) and fails t unless both reserved and succeeded.
func (d *demo) orchestratedPair(t *testing.T) {
	t.Helper()
	outs := make([]string, 2)
	timed(t, "orchestrated pair (parallel-demo-a and -b)", func() {
		var wg sync.WaitGroup
		for i, side := range []string{"a", "b"} {
			wg.Go(func() {
				outs[i] = d.script(t, nil, "orchestrated.sh", side, "--target", "time_sleep.slow_"+side, "--var", "slow_"+side+"_version=orch-"+side)
			})
		}
		wg.Wait()
	})
	for i, o := range outs {
		if !strings.Contains(o, "kl: reserved:") || !strings.Contains(o, "exited 0") {
			t.Errorf("orchestrated apply %c:\n%s", 'a'+i, tail(o, 20))
		}
	}
}

// prepare returns a working directory of the configuration, initialized
// against the demo's kld (tf.sh's prepare, as the scripts use it).
func (d *demo) prepare(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(d.dir, name)
	cmd := exec.CommandContext(t.Context(), "bash", "-c", `source "$1/examples/big-state/tf.sh" && prepare "$2"`, "prepare", d.root, dir)
	cmd.Env = d.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("prepare %s: %v\n%s", dir, err, out)
	}
	return dir
}

// tf runs the CLI in dir; exit codes other than 0 and allowedExit (the
// "changes" of -detailed-exitcode when it is 2) fail t.
func (d *demo) tf(t *testing.T, dir string, allowedExit int, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), d.tfBin, append([]string{"-chdir=" + dir}, append(args, "-no-color")...)...)
	cmd.Env = d.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err != nil && (allowedExit == 0 || code != allowedExit) {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 30))
	}
	return out.String()
}

// kl runs kl against the demo's kld and returns its output.
func (d *demo) kl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), tofu.BuildKL(t), args...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// slowVersion is the triggers.version of time_sleep.slow_SIDE in the
// state's current version.
func (d *demo) slowVersion(t *testing.T, side string) string {
	t.Helper()
	out := d.kl(t, "state", "show", "big-state", "time_sleep.slow_"+side)
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), `"version": "`); ok {
			return strings.TrimSuffix(v, `"`)
		}
	}
	t.Fatalf("no triggers.version in\n%s", out)
	return ""
}

// tfRuns is how many times the CLI ran through TF_BIN.
func (d *demo) tfRuns(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(d.tfLog)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// backendShare logs how much of an apply's wall time kld spent serving
// the state (its GETs and POSTs of it, from its log since mark).
func (d *demo) backendShare(t *testing.T, srv *tofu.Server, mark int, wall time.Duration) {
	t.Helper()
	var get, post time.Duration
	var gets, posts int
	for _, e := range logSince(srv, mark) {
		if e.fields["path"] != "/v1/states/big-state" {
			continue
		}
		dur, err := time.ParseDuration(e.fields["duration"])
		if err != nil {
			continue
		}
		switch e.fields["method"] {
		case "GET":
			get += dur
			gets++
		case "POST":
			post += dur
			posts++
		}
	}
	if posts == 0 {
		t.Errorf("kld logged no POST of the apply")
	}
	t.Logf("TIMING %s backend share of one apply: %d GET %s, %d POST %s, together %.1f%% of %s (the CLI the rest)",
		t.Name(), gets, get.Round(time.Millisecond), posts, post.Round(time.Millisecond),
		100*(get+post).Seconds()/wall.Seconds(), wall.Round(time.Millisecond))
}

// checkpoints runs a large apply or destroy in dir and checks every POST
// kld logged for it: all under one lock, none refused. It logs their
// count: the checkpoints (the CLI persists at most every 20 s while it
// works, and once at the end).
func (d *demo) checkpoints(t *testing.T, srv *tofu.Server, dir, label string, args ...string) {
	t.Helper()
	mark := len(srv.Log())
	timed(t, label, func() { d.tf(t, dir, 0, args...) })
	locks := map[string]bool{}
	var posts int
	for _, e := range logSince(srv, mark) {
		if e.fields["path"] != "/v1/states/big-state" || e.fields["method"] != "POST" {
			continue
		}
		posts++
		locks[e.fields["lock_id"]] = true
		if e.fields["status"] != "200" {
			t.Errorf("%s: a checkpoint was refused: %s", label, e.line)
		}
	}
	t.Logf("CHECKPOINTS %s %s: %d POSTs under %d lock(s)", t.Name(), label, posts, len(locks))
	if posts < 2 || len(locks) != 1 || locks[""] {
		t.Errorf("%s: %d POSTs under locks %v; want a checkpoint and the last write, all under the run's one lock", label, posts, locks)
	}
}

// historyRows splits kl history's table into the fields of each row: the
// version, serial, created time, source and actor, then the lock id and
// the changes' words.
func historyRows(out string) [][]string {
	var rows [][]string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); i > 0 && len(f) >= 6 {
			rows = append(rows, append(append(f[:1:1], f[1], f[2]+" "+f[3], f[4], f[5]), f[6:]...))
		}
	}
	return rows
}

// merged reports whether a history row is a write merged onto others
// (its changes column says so).
func merged(row []string) bool {
	return slices.ContainsFunc(row, func(f string) bool { return strings.HasPrefix(f, "merged") })
}

// serialOf is a history row's serial.
func serialOf(t *testing.T, row []string) int {
	t.Helper()
	n, err := strconv.Atoi(row[1])
	if err != nil {
		t.Fatalf("serial of %v: %v", row, err)
	}
	return n
}

package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// The real HashiCorp Terraform v1.5.7 (scripts/install-terraform.sh)
// against kld, unchanged: the same http backend block, the same commands.
// Terraform differs from OpenTofu in small ways (its version in the state,
// its lock error shows its own lock info and the holder's ID only), so the
// tests assert what a user of either relies on.

// terraformSleep is the seconds each changed resource of the lock and
// parallel beats takes: long enough that a second run starts while the
// first holds its lock.
const terraformSleep = 6

// TestTerraform: init, apply, a plan with no changes, GET byte for byte
// what Terraform posted, a second apply, force-unlock of a lock left
// behind; then, on a slow stack, a lock held by one Terraform refused to
// another (exclusive), and two plain applies on disjoint resources both
// landing (optimistic, merged at commit), in history. On both stores.
func TestTerraform(t *testing.T) {
	t.Parallel()
	skipShort(t)
	t.Logf("using %s", tofu.Terraform.Version(t))
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			srv := setup(t, s.url(t))
			terraformBasics(t, srv)
			terraformLocks(t, srv)
			t.Logf("TIMING %s whole flow: %s", t.Name(), time.Since(start).Round(time.Millisecond))
		})
	}
}

// terraformBasics is the quick start with terraform: what it posts is what
// GET answers, and a plan after each apply finds nothing to do.
func terraformBasics(t *testing.T, srv *tofu.Server) {
	t.Helper()
	const state = "terraform"
	rec, backend := recordedBackend(t, srv, state)
	wd := tofu.Terraform.NewWorkdir(t, backend+smallConfig("v1"))
	if out := wd.Must("init", "-no-color"); !strings.Contains(out, `Successfully configured the backend "http"!`) {
		t.Errorf("terraform init:\n%s", out)
	}

	var serial uint64
	for i, rev := range []string{"v1", "v2"} {
		wd.WriteFile("main.tf", backend+smallConfig(rev))
		out := wd.Must("apply", "-auto-approve", "-no-color")
		want := "Apply complete! Resources: 6 added, 0 changed, 0 destroyed."
		if i > 0 {
			want = "Apply complete! Resources: 0 added, 6 changed, 0 destroyed."
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: terraform apply does not say %q:\n%s", rev, want, out)
		}
		posted := rec.last(t)
		st := parseState(t, posted)
		if st.TerraformVersion != "1.5.7" || st.instances() != 6 {
			t.Errorf("%s: Terraform posted a state of terraform_version %q with %d instances, want 1.5.7 and 6", rev, st.TerraformVersion, st.instances())
		}
		if st.Serial <= serial {
			t.Errorf("%s: serial %d after %d", rev, st.Serial, serial)
		}
		serial = st.Serial
		if got := getState(t, srv, state); !bytes.Equal(got, posted) {
			t.Errorf("%s: GET is not what terraform POSTed:\nPOST (%d bytes): %.300q\nGET  (%d bytes): %.300q", rev, len(posted), posted, len(got), got)
		}
		if gz := getGzip(t, srv.StateURL(state)); !bytes.Equal(gz, posted) {
			t.Errorf("%s: GET with Accept-Encoding: gzip, decompressed, is not what terraform POSTed (%d vs %d bytes)", rev, len(gz), len(posted))
		}
		stdout, stderr, code := wd.Run("plan", "-detailed-exitcode", "-no-color")
		if code != 0 || !strings.Contains(stdout, "No changes.") {
			t.Errorf("%s: terraform plan after the apply: exit %d (want 0, no changes)\n%s\n%s", rev, code, stdout, stderr)
		}
	}
	if got := stateList(t, wd); !equalLists(got, smallAddresses) {
		t.Errorf("terraform state list = %q, want %q", got, smallAddresses)
	}
	var named map[string]string
	out := wd.Must("output", "-json", "named")
	if err := json.Unmarshal([]byte(out), &named); err != nil || named["alpha"] != "alpha" || len(named) != 3 {
		t.Errorf("terraform output -json named (%v):\n%s", err, out)
	}
	h := history(t, srv, state)
	if len(h) != 2 || h[0].Source != "apply" || h[1].Source != "apply" || h[0].Serial != serial {
		t.Errorf("history of %s: %+v, want the two applies, the newest at serial %d", state, h, serial)
	}

	// A lock left behind by a crashed run blocks terraform until
	// `terraform force-unlock -force ID` removes it. (Terraform 1.5.7 sends
	// that UNLOCK with an empty body: it never says which lock.)
	left := newLock("crashed-run@ci-runner-7")
	if code, body := lock(t, srv, state, left); code != http.StatusOK {
		t.Fatalf("LOCK: %d %s", code, body)
	}
	wd.WriteFile("main.tf", backend+smallConfig("v3"))
	if _, stderr, code := wd.Run("apply", "-auto-approve", "-no-color", "-lock-timeout=0s"); code == 0 || !strings.Contains(stderr, left.ID) {
		t.Errorf("apply on a state locked by %s: exit %d, want a failure naming the lock:\n%s", left.ID, code, stderr)
	}
	if out := wd.Must("force-unlock", "-force", left.ID); !strings.Contains(out, "successfully unlocked") {
		t.Errorf("terraform force-unlock:\n%s", out)
	}
	if out := wd.Must("apply", "-auto-approve", "-no-color"); !strings.Contains(out, "Apply complete! Resources: 0 added, 6 changed, 0 destroyed.") {
		t.Errorf("apply after force-unlock:\n%s", out)
	}
	if code, body := lock(t, srv, state, newLock("after@e2e")); code != http.StatusOK {
		t.Errorf("LOCK after force-unlock and apply: %d %s (something is still locked)", code, body)
	}
}

// terraformLocks: on an exclusive state a second terraform apply is
// refused at once while another holds the lock, naming the holder's lock;
// on an optimistic state two applies of disjoint resources run at once,
// both land, and kl history shows both. Terraform then plans the merged
// state (rendered by kld) with no changes.
func terraformLocks(t *testing.T, srv *tofu.Server) {
	t.Helper()
	const state = "terraform-stack"
	stack := slowResources(2)
	cur := seedStackWith(t, tofu.Terraform, srv, state, stack...)
	dirs := stackDirsWith(t, tofu.Terraform, srv, state, 2, stack...)

	holder, done := startHolder(t, srv, state, dirs[0], cur.with("slow_a", "held").applyArgs(terraformSleep))
	stdout, stderr, code := dirs[1].Run(cur.with("slow_b", "refused").applyArgs(0, "-lock-timeout=0s")...)
	t.Logf("what terraform printed on stderr while %s held the lock:\n%s", holder, stderr)
	if code == 0 {
		t.Errorf("a second terraform apply succeeded while %s holds the lock:\n%s", holder, stdout)
	}
	// Terraform 1.5.7 prints its own lock info under "Lock Info:" and the
	// holder only as the ID in the error (OpenTofu prints the holder's);
	// it wraps lines.
	flat := strings.Join(strings.Fields(stderr), " ")
	for _, want := range []string{"Error acquiring the state lock", "HTTP remote state already locked: ID=" + holder} {
		if !strings.Contains(flat, want) {
			t.Errorf("the refused apply's stderr does not show %q", want)
		}
	}
	if o := <-done; o.code != 0 {
		t.Fatalf("the holder's terraform apply: exit %d\n%s\n%s", o.code, o.stdout, o.stderr)
	}
	cur = cur.with("slow_a", "held")
	if got := stateInputs(t, srv, state); !maps.Equal(got, cur) {
		t.Fatalf("state after the holder's apply holds %v, want %v", got, cur)
	}

	setOptimistic(t, srv, state)
	both, wall := disjointPair(t, srv, state, dirs, cur, "from-a", "from-b", terraformSleep)
	if wall > 2*terraformSleep*time.Second {
		t.Errorf("the pair took %s: the applies did not overlap (each sleeps %ds)", wall.Round(time.Millisecond), terraformSleep)
	}
	h := versions(t, srv, state)
	logVersions(t, h[:3])
	if h[0].Source != "apply" || !h[0].Merged || h[1].Source != "apply" || h[1].Merged || h[0].LockID == h[1].LockID {
		t.Errorf("the pair's versions are %s (merged %v) by %s and %s (merged %v) by %s, want two applies by two locks, the second merged", h[1].Source, h[1].Merged, h[1].LockID, h[0].Source, h[0].Merged, h[0].LockID)
	}
	hist := mustKL(t, "--server", srv.URL, "history", state, "--limit=3")
	t.Logf("kl history %s --limit=3:\n%s", state, hist)
	rows := historyRows(hist)
	if len(rows) != 3 || !strings.HasPrefix(rows[0][0], "*") || rows[0][3] != "apply" || !merged(rows[0]) || rows[1][3] != "apply" || merged(rows[1]) {
		t.Errorf("kl history does not show the merged apply over the apply:\n%s", hist)
	}
	for _, v := range h[:2] {
		if !strings.Contains(hist, v.LockID) {
			t.Errorf("kl history does not show lock %s of version %d", v.LockID, v.Number)
		}
	}

	// Both directories, each holding the other's change only through the
	// merge kld rendered, plan their configuration with no changes.
	for _, d := range dirs {
		args := []string{"plan", "-detailed-exitcode", "-no-color"}
		for _, name := range []string{"slow_a", "slow_b"} {
			args = append(args, fmt.Sprintf("-var=%s=%s", name, both[name]))
		}
		if stdout, stderr, code := d.Run(args...); code != 0 {
			t.Errorf("terraform plan of the merged state: exit %d (want 0, no changes)\n%s\n%s", code, stdout, stderr)
		}
	}
}

// The Terraform replay's herd and slow resources' seconds: small, since
// TestDemo replays the whole demo at CI's scale with OpenTofu.
const (
	terraformDemoScale = 50
	terraformDemoSleep = 8
)

// TestDemoTerraform: the demo's parallel beat with TF_BIN=terraform (a name
// on PATH), on a small herd, through the scripts make demo-warm and make
// parallel-tf-a / -b run: demo-warm restores the state as Terraform writes
// it, terraform plan -refresh=false right after shows no changes, and both
// terminals at once on the optimistic state replace their slow resource in
// about the time of one, each a version in kl history; then the
// orchestrated pair (kl apply --orchestrated running terraform).
func TestDemoTerraform(t *testing.T) {
	t.Parallel()
	skipShort(t)
	tofu.Terraform.Binary(t)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := setup(t, s.url(t))
			d := newDemo(t, srv, tofu.Terraform, terraformDemoScale, terraformDemoSleep)
			var out string
			timed(t, "demo-warm (TF_BIN=terraform)", func() { out = d.script(t, nil, "demo-warm.sh") })
			if !strings.Contains(out, "demo-warm: restored") || !strings.Contains(out, "-terraform.tfstate") {
				t.Fatalf("demo-warm with TF_BIN=terraform said:\n%s", out)
			}
			plan := d.prepare(t, "plan")
			out = d.tf(t, plan, 0, "plan", "-refresh=false", "-detailed-exitcode")
			if !strings.Contains(out, "No changes.") {
				t.Errorf("terraform plan after demo-warm shows changes:\n%s", tail(out, 20))
			}

			d.kl(t, "state", "config", "big-state", "--exclusive-locks=false")
			outs, pair := d.parallelPair(t)
			for i, o := range outs {
				if !strings.Contains(o, "] terraform apply -refresh=false") {
					t.Errorf("terminal %c did not run terraform:\n%s", 'a'+i, tail(o, 20))
				}
			}
			if limit := 2 * terraformDemoSleep * time.Second; pair >= limit {
				t.Errorf("the pair took %s, at least two slow resources' %s: the applies took turns", pair.Round(time.Millisecond), limit)
			}
			if a, b := d.slowVersion(t, "a"), d.slowVersion(t, "b"); !strings.HasPrefix(a, "a-") || !strings.HasPrefix(b, "b-") {
				t.Errorf("after the pair slow_a = %q, slow_b = %q; want both terminals' versions", a, b)
			}
			hist := d.kl(t, "history", "big-state", "--limit=3")
			rows := historyRows(hist)
			if len(rows) != 3 || !strings.HasPrefix(rows[0][0], "*") || rows[2][3] != "import" ||
				rows[0][3] != "apply" || rows[1][3] != "apply" || merged(rows[0]) == merged(rows[1]) {
				t.Errorf("kl history after the pair: want the two applies (one merged onto the other) over the import:\n%s", hist)
			}

			// The orchestrated pair (make parallel-demo-a / -b): kl apply
			// --orchestrated runs terraform itself (KL_TF_BIN).
			d.orchestratedPair(t)
			if a, b := d.slowVersion(t, "a"), d.slowVersion(t, "b"); a != "orch-a" || b != "orch-b" {
				t.Errorf("after the orchestrated pair slow_a = %q, slow_b = %q; want orch-a, orch-b", a, b)
			}
			if n := d.tfRuns(t); n < 5 {
				t.Errorf("TF_BIN=terraform ran %d times, want every script's CLI runs", n)
			}
		})
	}
}

// TestDemoCLIConfig: the demo scripts give each CLI the config of make
// tofu's cache that resolves hashicorp/time where that CLI looks for it:
// terraformrc for Terraform, tofurc for OpenTofu.
func TestDemoCLIConfig(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	for _, k := range []tofu.Kind{tofu.OpenTofu, tofu.Terraform} {
		bin := k.Binary(t)
		t.Run(k.String(), func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "bash", "-c", `source "$1/examples/big-state/tf.sh" && echo "$TF_CLI_CONFIG_FILE"`, "tf.sh", tofu.ModuleRoot(t))
			cmd.Env = append(tofu.CleanEnv("TF_", "KL_"), "TF_BIN="+bin, tofu.EnvTofuCache+"="+cache)
			for _, rc := range []string{"tofurc", "terraformrc"} {
				if err := os.WriteFile(filepath.Join(cache, rc), []byte("# "+rc+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("source tf.sh: %v\n%s", err, out)
			}
			if got, want := strings.TrimSpace(string(out)), filepath.Join(cache, k.String()+"rc"); got != want {
				t.Errorf("tf.sh with TF_BIN=%s sets TF_CLI_CONFIG_FILE=%s, want %s", bin, got, want)
			}
		})
	}
}

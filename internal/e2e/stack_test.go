package e2e_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// slowResource is one terraform_data resource of a slow stack: its input is
// the variable of the same name, a new input replaces it, and creating it
// sleeps weight × var.sleep seconds in a local-exec provisioner.
// Provisioners run on create only, so replacing is what makes a changed
// input slow to apply.
type slowResource struct {
	name      string
	weight    int    // 0 means 1
	dependsOn string // another resource's name, or ""
}

// slowStack renders the configuration of resources after the backend block:
// one required string variable per resource, and var.sleep (default 0, so
// a seed apply is quick).
func slowStack(backend string, resources ...slowResource) string {
	var b strings.Builder
	b.WriteString(backend)
	b.WriteString(`
variable "sleep" {
  type        = number
  default     = 0
  description = "Seconds a created resource sleeps, times its weight."
}
`)
	for _, r := range resources {
		weight := max(r.weight, 1)
		fmt.Fprintf(&b, "\nvariable %q {\n  type = string\n}\n", r.name)
		fmt.Fprintf(&b, "\nresource \"terraform_data\" %q {\n", r.name)
		fmt.Fprintf(&b, "  input            = var.%s\n  triggers_replace = var.%s\n", r.name, r.name)
		if r.dependsOn != "" {
			fmt.Fprintf(&b, "  depends_on       = [terraform_data.%s]\n", r.dependsOn)
		}
		fmt.Fprintf(&b, "\n  provisioner \"local-exec\" {\n    command = \"sleep ${%d * var.sleep}\"\n  }\n}\n", weight)
	}
	return b.String()
}

// skipShort skips t under go test -short: it waits out applies that sleep.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping applies that sleep for seconds")
	}
}

// sqliteURL returns a new, empty SQLite database for t: the store of the
// tests that need only one.
func sqliteURL(t *testing.T) string { return filepath.Join(t.TempDir(), "kilolock.db") }

// slowResources returns n resources of weight 1: slow_a, slow_b, …
func slowResources(n int) []slowResource {
	rs := make([]slowResource, n)
	for i := range rs {
		rs[i] = slowResource{name: fmt.Sprintf("slow_%c", 'a'+i)}
	}
	return rs
}

// inputs are the values a directory passes, one per resource.
type inputs map[string]string

// with returns a copy of in with name set to value: what a directory that
// changes only name passes, every other input pinned to what the state
// holds.
func (in inputs) with(name, value string) inputs {
	c := maps.Clone(in)
	c[name] = value
	return c
}

// applyArgs returns the arguments of `tofu apply` with these inputs and
// sleep, followed by extra.
func (in inputs) applyArgs(sleep int, extra ...string) []string {
	args := []string{"apply", "-auto-approve", "-no-color", fmt.Sprintf("-var=sleep=%d", sleep)}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		args = append(args, fmt.Sprintf("-var=%s=%s", name, in[name]))
	}
	return append(args, extra...)
}

// seedStack creates state on srv from a seed directory that applies stack
// with every input "v1" and no sleep, and returns those inputs.
func seedStack(t *testing.T, srv *tofu.Server, state string, resources ...slowResource) inputs {
	t.Helper()
	return seedStackWith(t, tofu.OpenTofu, srv, state, resources...)
}

// seedStackWith is seedStack with the CLI cli.
func seedStackWith(t *testing.T, cli tofu.Kind, srv *tofu.Server, state string, resources ...slowResource) inputs {
	t.Helper()
	seed := inputs{}
	for _, r := range resources {
		seed[r.name] = "v1"
	}
	wd := cli.NewWorkdir(t, slowStack(srv.Backend(state), resources...))
	wd.Must("init", "-no-color")
	timed(t, "seed apply", func() { wd.Must(seed.applyArgs(0)...) })
	if got := stateInputs(t, srv, state); !maps.Equal(got, seed) {
		t.Fatalf("seeded state holds %v, want %v", got, seed)
	}
	return seed
}

// stackDirs returns n initialized working directories of stack on the
// same backend address.
func stackDirs(t *testing.T, srv *tofu.Server, state string, n int, resources ...slowResource) []*tofu.Workdir {
	t.Helper()
	return stackDirsWith(t, tofu.OpenTofu, srv, state, n, resources...)
}

// stackDirsWith is stackDirs with the CLI cli.
func stackDirsWith(t *testing.T, cli tofu.Kind, srv *tofu.Server, state string, n int, resources ...slowResource) []*tofu.Workdir {
	t.Helper()
	dirs := make([]*tofu.Workdir, n)
	for i := range dirs {
		dirs[i] = cli.NewWorkdir(t, slowStack(srv.Backend(state), resources...))
		dirs[i].Must("init", "-no-color")
	}
	return dirs
}

// setOptimistic switches state to optimistic locks with
// `kl state config NAME --exclusive-locks=false` and checks the API says so.
func setOptimistic(t *testing.T, srv *tofu.Server, state string) {
	t.Helper()
	out := mustKL(t, "--server", srv.URL, "state", "config", state, "--exclusive-locks=false")
	t.Logf("kl state config %s --exclusive-locks=false:\n%s", state, out)
	if mode := stateStatus(t, srv, state).LockMode; mode != "optimistic" {
		t.Fatalf("lock mode after kl state config --exclusive-locks=false: %q, want optimistic", mode)
	}
}

// apiStatus is the part of GET /v1/api/states/{name} the tests look at.
type apiStatus struct {
	LockMode string `json:"lock_mode"`
	Current  int64  `json:"current_version"`
	Locks    []struct {
		Info        lockInfo `json:"info"`
		BaseVersion int64    `json:"base_version"`
		Shared      bool     `json:"shared"`
	} `json:"locks"`
}

func stateStatus(t *testing.T, srv *tofu.Server, state string) apiStatus {
	t.Helper()
	url := srv.URL + "/v1/api/states/" + state
	code, body := request(t, http.MethodGet, url, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	var st apiStatus
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	return st
}

// stateInputs returns the input of every terraform_data instance in the
// current state, by resource name.
func stateInputs(t *testing.T, srv *tofu.Server, state string) inputs {
	t.Helper()
	return parseInputs(t, getState(t, srv, state))
}

func parseInputs(t *testing.T, doc []byte) inputs {
	t.Helper()
	var s struct {
		Resources []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Instances []struct {
				Attributes struct {
					Input struct {
						Value string `json:"value"`
					} `json:"input"`
				} `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		t.Fatalf("parse state: %v\n%.500s", err, doc)
	}
	in := inputs{}
	for _, r := range s.Resources {
		if r.Type == "terraform_data" && len(r.Instances) == 1 {
			in[r.Name] = r.Instances[0].Attributes.Input.Value
		}
	}
	return in
}

// waitFor polls cond every 100ms until it holds or timeout passes, and
// reports whether it held.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitLocks waits until state has n lock holders and returns their lock
// ids, oldest first.
func waitLocks(t *testing.T, srv *tofu.Server, state string, n int, timeout time.Duration) []string {
	t.Helper()
	var ids []string
	ok := waitFor(timeout, func() bool {
		st := stateStatus(t, srv, state)
		ids = ids[:0]
		for _, l := range st.Locks {
			ids = append(ids, l.Info.ID)
		}
		return len(ids) >= n
	})
	if !ok {
		t.Fatalf("state %s has %d lock holders after %s, want %d", state, len(ids), timeout, n)
	}
	return ids
}

// run is one tofu command of a batch started together.
type run struct {
	name string
	wd   *tofu.Workdir
	args []string
}

// outcome is what one run did; took counts from the batch's start.
type outcome struct {
	run
	stdout, stderr string
	code           int
	took           time.Duration
}

// startHolder starts wd's CLI with args in the background (an apply that
// takes a while) and waits until it holds a lock on state. It returns the
// lock's id and the channel the run's outcome arrives on.
func startHolder(t *testing.T, srv *tofu.Server, state string, wd *tofu.Workdir, args []string) (string, <-chan outcome) {
	t.Helper()
	done := make(chan outcome, 1)
	go func() {
		o := outcome{run: run{"holder", wd, args}}
		o.stdout, o.stderr, o.code = wd.Run(args...)
		done <- o
	}()
	return waitLocks(t, srv, state, 1, 30*time.Second)[0], done
}

// runTogether starts every run at the same instant, waits for all of them
// and returns their outcomes, in order, and the wall time of the batch. It
// logs a TIMING line for each run and for the batch under label.
func runTogether(t *testing.T, label string, runs ...run) ([]outcome, time.Duration) {
	t.Helper()
	outs := make([]outcome, len(runs))
	var ready, done sync.WaitGroup
	startGate := make(chan struct{})
	var start time.Time
	for i, r := range runs {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-startGate
			o := outcome{run: r}
			o.stdout, o.stderr, o.code = r.wd.Run(r.args...)
			o.took = time.Since(start)
			outs[i] = o
		}()
	}
	ready.Wait()
	start = time.Now()
	close(startGate)
	done.Wait()
	wall := time.Since(start)
	for _, o := range outs {
		t.Logf("TIMING %s %s, %s: %s (exit %d)", t.Name(), label, o.name, o.took.Round(time.Millisecond), o.code)
	}
	t.Logf("TIMING %s %s, wall: %s", t.Name(), label, wall.Round(time.Millisecond))
	return outs, wall
}

// mustSucceed fails t for every outcome that did not exit 0.
func mustSucceed(t *testing.T, outs []outcome) {
	t.Helper()
	for _, o := range outs {
		if o.code != 0 {
			t.Errorf("%s: %s %s: exit %d\nstdout:\n%s\nstderr:\n%s", o.name, o.wd.Kind(), strings.Join(o.args, " "), o.code, o.stdout, o.stderr)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// ratio is a/b.
func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// versionRecord is a version as GET /v1/api/states/{name}/versions lists it.
type versionRecord struct {
	Number     int64  `json:"number"`
	Serial     uint64 `json:"serial"`
	Source     string `json:"source"`
	LockID     string `json:"lock_id"`
	BaseSerial uint64 `json:"base_serial"`
	Merged     bool   `json:"merged"`
	Added      int    `json:"added"`
	Changed    int    `json:"changed"`
	Removed    int    `json:"removed"`
}

// versions returns the versions of state, newest first, from the API.
func versions(t *testing.T, srv *tofu.Server, state string) []versionRecord {
	t.Helper()
	url := srv.URL + "/v1/api/states/" + state + "/versions?limit=1000"
	code, body := request(t, http.MethodGet, url, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	var v struct {
		Versions []versionRecord `json:"versions"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	return v.Versions
}

// logVersions logs versions, newest first.
func logVersions(t *testing.T, vs []versionRecord) {
	t.Helper()
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  version %d serial %d (base %d) %-5s lock %s  +%d ~%d -%d", v.Number, v.Serial, v.BaseSerial, v.Source, v.LockID, v.Added, v.Changed, v.Removed)
	}
	t.Logf("versions, newest first:%s", b.String())
}

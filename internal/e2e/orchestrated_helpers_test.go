package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// orchMain and the slow files are the configuration of the orchestrated
// apply tests: two time_sleep resources declared in two files of one
// state. A new trigger value replaces a resource, and creating it takes
// its sleep.
const orchMain = `
variable "a" {
  default = "v1"
}
variable "b" {
  default = "v1"
}
variable "sleep_a" {
  default = "0s"
}
variable "sleep_b" {
  default = "0s"
}
`

const orchSlowA = `
resource "time_sleep" "slow_a" {
  create_duration = var.sleep_a
  triggers        = { v = var.a }
}
`

const orchSlowB = `
resource "time_sleep" "slow_b" {
  create_duration = var.sleep_b
  triggers        = { v = var.b }
}
`

// orchWorkdirs returns n initialized working directories of the
// orchestrated configuration on state name, as n engineers' checkouts;
// the first one applied it once (both resources at v1, no sleep).
func orchWorkdirs(t *testing.T, srv *tofu.Server, name string, n int) []*tofu.Workdir {
	t.Helper()
	return orchWorkdirsWith(t, srv, name, n, orchSlowA)
}

// orchWorkdirsWith is orchWorkdirs with slowA as slow_a.tf.
func orchWorkdirsWith(t *testing.T, srv *tofu.Server, name string, n int, slowA string) []*tofu.Workdir {
	t.Helper()
	var wds []*tofu.Workdir
	for i := range n {
		wd := tofu.NewWorkdir(t, srv.Backend(name)+orchMain)
		wd.WriteFile("slow_a.tf", slowA)
		wd.WriteFile("slow_b.tf", orchSlowB)
		wd.Must("init", "-no-color")
		if i == 0 {
			wd.Must("apply", "-auto-approve", "-no-color")
		}
		wds = append(wds, wd)
	}
	return wds
}

// klRun is a kl process running in a working directory.
type klRun struct {
	t     *testing.T
	args  []string
	cmd   *exec.Cmd
	out   lockedBuffer
	err   lockedBuffer
	done  chan struct{}
	code  int
	start time.Time
	took  time.Duration
}

// startKL starts kl with args in wd (its tofu environment, KL_TF_BIN set).
func startKL(t *testing.T, wd *tofu.Workdir, args ...string) *klRun {
	t.Helper()
	return startKLEnv(t, wd, nil, args...)
}

// startKLEnv is startKL with env (KEY=VALUE) set over wd's environment;
// KEY= alone removes KEY.
func startKLEnv(t *testing.T, wd *tofu.Workdir, env []string, args ...string) *klRun {
	t.Helper()
	return startKLPiped(t, wd, env, nil, args...)
}

// startKLPiped is startKLEnv with kl's stderr on the file stderr, when not
// nil, instead of the run's buffer.
func startKLPiped(t *testing.T, wd *tofu.Workdir, env []string, stderr *os.File, args ...string) *klRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	r := &klRun{t: t, args: args, done: make(chan struct{})}
	r.cmd = wd.Command(ctx, tofu.BuildKL(t), args...)
	r.cmd.Env = setEnv(r.cmd.Env, env)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
	if stderr != nil {
		r.cmd.Stderr = stderr
	}
	r.start = time.Now()
	if err := r.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start kl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		defer cancel()
		r.cmd.Wait()
		r.took = time.Since(r.start)
		r.code = r.cmd.ProcessState.ExitCode()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// setEnv returns environ with each KEY=VALUE of env set, replacing KEY's
// value; KEY= with no value removes KEY.
func setEnv(environ, env []string) []string {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		environ = slices.DeleteFunc(environ, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		if v != "" {
			environ = append(environ, kv)
		}
	}
	return environ
}

// wait waits for kl to exit and returns its exit code.
func (r *klRun) wait() int {
	<-r.done
	r.t.Logf("kl %s: exit %d in %s", strings.Join(r.args, " "), r.code, r.took.Round(time.Millisecond))
	return r.code
}

// mustSucceed waits for kl and fails the test unless it exited 0.
func (r *klRun) mustSucceed() {
	r.t.Helper()
	if code := r.wait(); code != 0 {
		r.t.Fatalf("kl %s: exit %d\n%s", strings.Join(r.args, " "), code, r.output())
	}
}

func (r *klRun) output() string {
	return "stdout:\n" + r.out.String() + "\nstderr:\n" + r.err.String()
}

// waitStderr waits until kl has written substr to stderr.
func (r *klRun) waitStderr(substr string, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(r.err.String(), substr) {
		select {
		case <-r.done:
			if strings.Contains(r.err.String(), substr) {
				return
			}
			r.t.Fatalf("kl %s exited %d before writing %q\n%s", strings.Join(r.args, " "), r.code, substr, r.output())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("kl %s: no %q after %s\n%s", strings.Join(r.args, " "), substr, timeout, r.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends kl SIGKILL, as a crash or `kill -9` would.
func (r *klRun) kill() {
	r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// lockedBuffer is a buffer one process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// applyRun is an apply run as the JSON API answers it.
type applyRun struct {
	ID       string    `json:"id"`
	State    string    `json:"state"`
	Actor    string    `json:"actor"`
	Status   string    `json:"status"`
	Acquired time.Time `json:"acquired"`
	Ended    time.Time `json:"ended"`
	EndedBy  string    `json:"ended_by"`
	Reason   string    `json:"reason"`
	Expires  time.Time `json:"expires"`
	Reserved []struct {
		Pattern string `json:"pattern"`
		Mode    string `json:"mode"`
	} `json:"reservations"`
}

// runs lists the apply runs of state name, newest first.
func runs(t *testing.T, srv *tofu.Server, name string, inFlight bool) []applyRun {
	t.Helper()
	url := srv.URL + "/v1/api/states/" + name + "/runs?limit=100"
	if inFlight {
		url += "&in_flight=true"
	}
	code, body := request(t, http.MethodGet, url, nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	var out struct {
		Runs []applyRun `json:"runs"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
	return out.Runs
}

// waitActive waits until state name has an active apply run that holds
// pattern, and returns it; the run is by's, which must not exit first.
func waitActive(t *testing.T, srv *tofu.Server, name, pattern string, by *klRun) applyRun {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-by.done:
			t.Fatalf("kl %s exited %d before its run held %s\n%s", strings.Join(by.args, " "), by.code, pattern, by.output())
		default:
		}
		for _, r := range runs(t, srv, name, true) {
			if r.Status != "active" {
				continue
			}
			for _, res := range r.Reserved {
				if res.Pattern == pattern {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no active apply run holding %s on %s", pattern, name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// trigger returns the trigger value v of a time_sleep in the state.
func trigger(t *testing.T, srv *tofu.Server, name, resource string) string {
	t.Helper()
	var st struct {
		Resources []struct {
			Name      string `json:"name"`
			Instances []struct {
				Attributes struct {
					Triggers map[string]string `json:"triggers"`
				} `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(getState(t, srv, name), &st); err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Resources {
		if r.Name == resource && len(r.Instances) == 1 {
			return r.Instances[0].Attributes.Triggers["v"]
		}
	}
	t.Fatalf("state %s has no %s", name, resource)
	return ""
}

// orchProvisionedA is slow_a.tf as a terraform_data whose creation runs a
// local-exec provisioner: it writes its process id to provisioner.pid and
// becomes `sleep var.sleep_a`, a process of the CLI's own.
var orchProvisionedA = provisionedA("exec sleep ${var.sleep_a}")

// orchStubbornA is orchProvisionedA whose provisioner ignores SIGINT, and
// its sleep, a child of the provisioner's shell, too.
var orchStubbornA = provisionedA("trap '' INT; sleep ${var.sleep_a} & wait")

func provisionedA(command string) string {
	return `
resource "terraform_data" "slow_a" {
  triggers_replace = var.a
  input            = var.a
  provisioner "local-exec" {
    command = "echo $$ > ${path.module}/provisioner.pid; ` + command + `"
  }
}
`
}

// waitPIDFile waits until path holds a process id, written while by runs,
// and returns it.
func waitPIDFile(t *testing.T, path string, by *klRun) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		select {
		case <-by.done:
			t.Fatalf("kl %s exited %d before %s was written\n%s", strings.Join(by.args, " "), by.code, path, by.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process id in %s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procStat is a process's state and process group, from /proc/PID/stat.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0][0], pgrp, err == nil
}

// groupMembers lists the processes of process group pgrp that still run
// (a zombie, dead and waiting to be reaped, does not).
func groupMembers(t *testing.T, pgrp int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("list processes: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, g, ok := procStat(pid); ok && g == pgrp && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

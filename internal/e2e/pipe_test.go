package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kilolock/kilolock/internal/tofu"
)

// pipeConfig reads two remote states from the test's own server, b after
// a: a plan of it holds its state lock while the server keeps a waiting.
const pipeConfig = `
data "terraform_remote_state" "a" {
  backend = "http"
  config  = { address = "%[1]s/a" }
}
data "terraform_remote_state" "b" {
  backend = "http"
  config  = { address = "%[1]s/b?after=${data.terraform_remote_state.a.outputs.v}" }
}
resource "terraform_data" "d" {
  count = 20
  input = "x${count.index}"
}
`

// heldRemote is the remote the configuration reads: once hold is set, it
// keeps the read of a waiting until release is called, so that a plan is
// caught holding its state lock.
type heldRemote struct {
	url     string
	hold    atomic.Bool
	release func()
}

// pipeWorkdir is a configuration of pipeConfig on state name, applied,
// whose remote holds from now on.
func pipeWorkdir(t *testing.T, srv *tofu.Server, name string) (*tofu.Workdir, *heldRemote) {
	t.Helper()
	r := &heldRemote{}
	released := make(chan struct{})
	r.release = sync.OnceFunc(func() { close(released) })
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.hold.Load() && req.URL.Path == "/a" {
			select {
			case <-released:
			case <-req.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"version":4,"terraform_version":"1.10.10","serial":1,"lineage":"remote","outputs":{"v":{"value":"1","type":"string"}},"resources":[]}`))
	}))
	t.Cleanup(remote.Close)
	t.Cleanup(r.release)
	r.url = remote.URL
	wd := tofu.NewWorkdir(t, srv.Backend(name)+strings.ReplaceAll(pipeConfig, "%[1]s", remote.URL))
	wd.Must("init", "-no-color")
	wd.Must("apply", "-auto-approve", "-no-color")
	r.hold.Store(true)
	return wd, r
}

// stateLocks are the locks state name holds.
func stateLocks(t *testing.T, srv *tofu.Server, name string) []json.RawMessage {
	t.Helper()
	var st struct {
		Locks []json.RawMessage `json:"locks"`
	}
	out := mustKL(t, "--server", srv.URL, "status", name, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("kl status %s --json: %v\n%s", name, err, out)
	}
	return st.Locks
}

// TestDriftCheckReaderGone: a kl drift check whose reader goes away
// mid-plan (its output piped to a program that exits, as `| head` does)
// stops the CLI gracefully, which releases the state's plan lock, instead
// of dying by SIGPIPE and leaving the lock held forever.
func TestDriftCheckReaderGone(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd, remote := pipeWorkdir(t, srv, "pipe")

		// kl's stderr, where the CLI's output goes at debug level, is a
		// pipe whose reader leaves after the plan's first data source.
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r := startKLPiped(t, wd, []string{"KL_LOG_LEVEL=debug"}, wr, "drift", "check")
		wr.Close()
		lines := bufio.NewScanner(rd)
		for !strings.Contains(lines.Text(), "data.terraform_remote_state.a: Reading...") {
			if !lines.Scan() {
				rd.Close()
				t.Fatalf("kl drift check ended its output before the plan read a: %v", lines.Err())
			}
		}
		rd.Close()
		remote.release() // a answers: the CLI writes to the closed pipe

		select {
		case <-r.done:
		case <-time.After(time.Minute):
			t.Fatalf("kl drift check still runs a minute after its reader left\n%s", r.output())
		}
		if r.cmd.ProcessState.ExitCode() < 0 {
			t.Errorf("kl drift check died by a signal (%s)", r.cmd.ProcessState)
		}
		if locks := stateLocks(t, srv, "pipe"); len(locks) != 0 {
			t.Fatalf("after kl drift check lost its reader, state pipe holds %d lock(s): the CLI's plan lock was left behind", len(locks))
		}
	})
}

// TestDriftCheckHead runs `kl drift check . | head -5` in a shell, as the
// issue did, and the same with --verbose and stderr into the pipe: no
// lock is left on the state, and kl's stdout is its summary.
func TestDriftCheckHead(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd, remote := pipeWorkdir(t, srv, "head")
		remote.hold.Store(false)
		kl := tofu.BuildKL(t)
		for _, line := range []string{
			kl + " drift check . | head -5",
			kl + " --verbose drift check . 2>&1 | head -5",
		} {
			cmd := wd.Command(t.Context(), "sh", "-c", line)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			if !strings.Contains(line, "--verbose") && string(out) != "checked @1 of head, the whole state: 0 instances drifted\n" {
				t.Errorf("%s printed more than kl's summary:\n%s", line, out)
			}
			if locks := stateLocks(t, srv, "head"); len(locks) != 0 {
				t.Fatalf("after %s, state head holds %d lock(s): the CLI's plan lock was left behind", line, len(locks))
			}
		}
	})
}

// TestPlanLockLimit: a plan's lock whose CLI was killed with kl (kill -9:
// nothing can release it) is ended by kld once held past
// --plan-lock-limit, and a classic exclusive plan lock (plans not shared)
// too, so that an apply goes on.
func TestPlanLockLimit(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := tofu.StartKLD(t, databaseURL, "--plan-lock-limit", "3s")
		for _, tc := range []struct{ name, mode string }{{"limit-shared", ""}, {"limit-classic", "--shared-plan-locks=false"}} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.mode != "" {
					mustKL(t, "--server", srv.URL, "state", "config", tc.name, tc.mode)
				}
				wd, remote := pipeWorkdir(t, srv, tc.name)
				r := startKLEnv(t, wd, []string{"KL_LOG_LEVEL=debug"}, "drift", "check")
				r.waitStderr("data.terraform_remote_state.a: Reading...", time.Minute)
				if locks := stateLocks(t, srv, tc.name); len(locks) != 1 {
					t.Fatalf("the plan of kl drift check holds %d lock(s), want 1", len(locks))
				}
				killedAt := time.Now()
				r.kill()
				remote.release()
				time.Sleep(500 * time.Millisecond)
				if locks := stateLocks(t, srv, tc.name); len(locks) != 1 {
					t.Fatalf("after kill -9 of kl, the state holds %d lock(s), want the plan's, left behind", len(locks))
				}
				deadline := killedAt.Add(3*time.Second + 10*time.Second)
				for len(stateLocks(t, srv, tc.name)) != 0 {
					if time.Now().After(deadline) {
						t.Fatalf("the plan's lock is still held %s after its CLI died, past the limit of 3s\nkld log:\n%s", time.Since(killedAt), srv.Log())
					}
					time.Sleep(200 * time.Millisecond)
				}
				t.Logf("TIMING %s plan lock ended %s after its kl was killed (limit 3s)", t.Name(), time.Since(killedAt).Round(time.Millisecond))
				if !strings.Contains(srv.Log(), "ended a plan's lock held past the limit") {
					t.Errorf("kld does not log the lock it ended:\n%s", srv.Log())
				}
				// tofu's own apply gets the lock.
				wd.Must("apply", "-auto-approve", "-no-color", "-lock-timeout=0s")
			})
		}
	})
}

// TestDriftCheckSignals: SIGINT (Ctrl-C) or SIGTERM to a kl drift check
// mid-plan stops the CLI gracefully, which releases its plan lock, and kl
// exits 130 (interrupted): no lock is left for kld's limit to end.
func TestDriftCheckSignals(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			name := "sig-" + strings.ToLower(strings.TrimPrefix(unix.SignalName(sig), "SIG"))
			t.Run(name, func(t *testing.T) {
				wd, remote := pipeWorkdir(t, srv, name)
				r := startKLEnv(t, wd, []string{"KL_LOG_LEVEL=debug"}, "drift", "check")
				r.waitStderr("data.terraform_remote_state.a: Reading...", time.Minute)
				if locks := stateLocks(t, srv, name); len(locks) != 1 {
					t.Fatalf("the plan of kl drift check holds %d lock(s), want 1", len(locks))
				}
				r.cmd.Process.Signal(sig)
				time.Sleep(500 * time.Millisecond) // the CLI is interrupted while it reads
				remote.release()
				if code := r.wait(); code != 130 {
					t.Errorf("kl drift check after %v: exit %d, want 130\n%s", sig, code, r.output())
				}
				if locks := stateLocks(t, srv, name); len(locks) != 0 {
					t.Fatalf("after %v to kl drift check, the state holds %d lock(s): the CLI's plan lock was left behind\n%s", sig, len(locks), r.output())
				}
			})
		}
	})
}

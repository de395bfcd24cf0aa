package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kilolock/kilolock/internal/tofu"
)

// fleetCLI makes a fleet's cycles with the real OpenTofu CLI, as a user
// who scripts a write per state would: each cycle writes the state's next
// version to a file and runs `tofu state push` on it, which LOCKs the
// state, GETs it (to check its lineage and serial), POSTs the file as
// tofu encodes it and UNLOCKs. Each writer has a working directory of its
// own, initialised once with the http backend; the state a cycle writes is
// named by TF_HTTP_ADDRESS (and its lock and unlock addresses), which the
// backend reads when its block leaves them out.
//
// tofu talks to the server through a proxy in the benchmark's process,
// which times each request by method, so that a run reports the same
// LOCK, POST and UNLOCK times as the in-process clients; the proxy costs
// the same against either server.
type fleetCLI struct {
	bin   string
	dirs  chan *tofu.Workdir
	proxy *httptest.Server
	// steps holds what the proxy timed of each state's current cycle, by
	// state name: only the writer holding the state reads or clears it.
	steps sync.Map // string → *cliSteps
	// cpu is the CPU time (user and system) of every tofu run, in ns.
	cpu atomic.Int64
}

// cliSteps are the times of one cycle's requests.
type cliSteps struct {
	mu                 sync.Mutex
	lock, post, unlock time.Duration
}

// newFleetCLI readies a directory per writer against target: tofu init
// with the http backend, through the proxy.
func newFleetCLI(tb testing.TB, t *fleetTarget, writers int) *fleetCLI {
	tb.Helper()
	c := &fleetCLI{bin: tofu.Binary(tb), dirs: make(chan *tofu.Workdir, writers)}
	// Every state is at the same place relative to the server's base.
	base, err := url.Parse(strings.TrimSuffix(t.stateURL("x"), "/v1/states/x"))
	if err != nil {
		tb.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(base)
	proxy.Transport = timedTransport{c, &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}
	c.proxy = httptest.NewServer(proxy)
	tb.Cleanup(c.proxy.Close)
	for range writers {
		wd := tofu.NewWorkdir(tb, "terraform {\n  backend \"http\" {}\n}\n")
		cmd := c.command(tb.Context(), wd, fleetName(0), "init", "-input=false", "-no-color")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("tofu init: %v\n%s", err, out)
		}
		c.dirs <- wd
	}
	return c
}

// timedTransport is the proxy's transport: it times each request to the
// server, and keeps the time before the proxy answers tofu, so before
// tofu can exit and its writer read the cycle's times.
type timedTransport struct {
	c    *fleetCLI
	next http.RoundTripper
}

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	begin := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		t.c.timed(r, time.Since(begin))
	}
	return resp, err
}

// timed keeps the time of a LOCK, POST or UNLOCK of a state.
func (c *fleetCLI) timed(r *http.Request, d time.Duration) {
	name, ok := strings.CutPrefix(r.URL.Path, "/v1/states/")
	if !ok {
		return
	}
	v, _ := c.steps.LoadOrStore(name, &cliSteps{})
	s := v.(*cliSteps)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case "LOCK":
		s.lock = d
	case "POST":
		s.post = d
	case "UNLOCK":
		s.unlock = d
	}
}

// command is tofu with args in wd, its http backend at state name.
func (c *fleetCLI) command(ctx context.Context, wd *tofu.Workdir, name string, args ...string) *exec.Cmd {
	cmd := wd.Command(ctx, c.bin, args...)
	addr := c.proxy.URL + "/v1/states/" + name
	cmd.Env = append(cmd.Env, "TF_HTTP_ADDRESS="+addr, "TF_HTTP_LOCK_ADDRESS="+addr, "TF_HTTP_UNLOCK_ADDRESS="+addr)
	return cmd
}

// push is a cycle of state i whose next version is doc: tofu state push,
// in a directory no other writer uses meanwhile.
func (c *fleetCLI) push(ctx context.Context, i int, doc []byte, times *fleetTimes) error {
	wd := <-c.dirs
	defer func() { c.dirs <- wd }()
	file := filepath.Join(wd.Dir, "next.tfstate")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		return err
	}
	name := fleetName(i)
	c.steps.Delete(name)
	cmd := c.command(ctx, wd, name, "state", "push", "-no-color", file)
	out, err := cmd.CombinedOutput()
	if st := cmd.ProcessState; st != nil {
		c.cpu.Add(int64(st.UserTime() + st.SystemTime()))
	}
	if err != nil {
		return fmt.Errorf("tofu state push of %s: %v\n%s", name, err, out)
	}
	v, ok := c.steps.Load(name)
	if !ok {
		return fmt.Errorf("tofu state push of %s: no request of it reached the server", name)
	}
	s := v.(*cliSteps)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == 0 || s.post == 0 || s.unlock == 0 {
		return fmt.Errorf("tofu state push of %s: LOCK %s, POST %s, UNLOCK %s: each should have been sent once", name, s.lock, s.post, s.unlock)
	}
	times.lock = append(times.lock, s.lock)
	times.post = append(times.post, s.post)
	times.unlock = append(times.unlock, s.unlock)
	times.commits++
	return nil
}

// cliCPU is the CPU time of the fleet's tofu runs so far (0 without the
// CLI client).
func (f *fleet) cliCPU() time.Duration {
	if f.cli == nil {
		return 0
	}
	return time.Duration(f.cli.cpu.Load())
}

// reportCLI reports cli_cpu_ms/commit, the CPU time of the tofu runs of
// commits cycles, with the CLI client.
func (f *fleet) reportCLI(b *testing.B, cpu time.Duration, commits int) {
	if f.cli != nil {
		b.ReportMetric(cpu.Seconds()*1000/float64(commits), "cli_cpu_ms/commit")
	}
}

package testpg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Formation is a pg_auto_failover formation on this machine: a monitor
// and two PostgreSQL nodes, a primary and a standby it replicates to
// synchronously, each a `pg_autoctl run` service on a TCP port of
// 127.0.0.1 (run as the "postgres" user when the tests run as root). It
// is for the tests of failover; other tests use URL.
type Formation struct {
	tb      testing.TB
	dir     string
	autoctl string
	pgCtl   string
	owner   *account
	monitor int    // the monitor's port
	nodes   [2]int // the nodes' ports
	runs    []*exec.Cmd
}

// formationDB is the database the nodes serve.
const formationDB = "kilolock"

// monitorSettings make the monitor notice a node's trouble within a few
// seconds instead of half a minute: a test's failover is planned, but a
// node that lags is still told apart quickly.
var monitorSettings = []string{
	"pgautofailover.health_check_period = 1000",
	"pgautofailover.health_check_timeout = 1000",
	"pgautofailover.health_check_max_retries = 2",
	"pgautofailover.health_check_retry_delay = 500",
	"pgautofailover.node_considered_unhealthy_timeout = 5000",
	"pgautofailover.primary_demote_timeout = 10000",
	"pgautofailover.startup_grace_period = 5000",
}

// StartFormation creates and starts a formation, waits until it has a
// primary and a synchronous standby, and stops it (removing its
// directory) when tb ends. It skips tb when PostgreSQL or pg_autoctl
// (Debian: postgresql-15-auto-failover) is not installed, or fails it when
// CI=true.
func StartFormation(tb testing.TB) *Formation {
	tb.Helper()
	f, err := newFormation(tb)
	if err != nil {
		var miss *missingError
		switch {
		case errors.As(err, &miss) && inCI():
			tb.Fatalf("testpg: %v; CI is set, so this fails rather than skips", err)
		case errors.As(err, &miss):
			tb.Skipf("testpg: %v", err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(f.stop)
	if err := f.start(); err != nil {
		tb.Fatalf("testpg: start a pg_auto_failover formation: %v%s", err, f.logTail())
	}
	return f
}

func newFormation(tb testing.TB) (*Formation, error) {
	initdb, pgCtl, err := findBinaries()
	if err != nil {
		return nil, err
	}
	autoctl := filepath.Join(filepath.Dir(initdb), "pg_autoctl")
	if !isExecutable(autoctl) {
		if autoctl, err = exec.LookPath("pg_autoctl"); err != nil {
			return nil, &missingError{"pg_auto_failover is not installed: no pg_autoctl beside " + initdb + " or on PATH (Debian: apt-get install postgresql-15-auto-failover)"}
		}
	}
	var owner *account
	if os.Geteuid() == 0 {
		if owner, err = lookupAccount("postgres"); err != nil {
			return nil, &missingError{fmt.Sprintf("running as root, and there is no \"postgres\" user to run PostgreSQL as: %v", err)}
		}
	}
	dir, err := os.MkdirTemp(tempBase(owner != nil), "kl-testpgaf-")
	if err != nil {
		return nil, fmt.Errorf("testpg: create the formation directory: %w", err)
	}
	if owner != nil {
		if err := os.Chown(dir, owner.uid, owner.gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("testpg: chown %s to postgres: %w", dir, err)
		}
	}
	f := &Formation{tb: tb, dir: dir, autoctl: autoctl, pgCtl: pgCtl, owner: owner}
	ports, err := freePorts(3)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	f.monitor, f.nodes = ports[0], [2]int{ports[1], ports[2]}
	return f, nil
}

// freePorts returns n TCP ports of 127.0.0.1 that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testpg: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (f *Formation) pgdata(name string) string { return filepath.Join(f.dir, name) }

// monitorURL is the URL the nodes register with.
func (f *Formation) monitorURL() string {
	return fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", f.monitor)
}

func (f *Formation) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	common := []string{"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--pgctl", f.pgCtl}
	if err := f.autoctlRun(ctx, "create.log", append([]string{"create", "monitor", "--pgdata", f.pgdata("monitor"), "--pgport", strconv.Itoa(f.monitor)}, common...)...); err != nil {
		return err
	}
	if err := appendFile(filepath.Join(f.pgdata("monitor"), "postgresql.conf"), "\n# testpg\n"+strings.Join(monitorSettings, "\n")+"\n"); err != nil {
		return err
	}
	if err := f.service("monitor"); err != nil {
		return err
	}
	for i, port := range f.nodes {
		name := fmt.Sprintf("node%d", i+1)
		if err := f.autoctlRun(ctx, "create.log", append([]string{"create", "postgres", "--pgdata", f.pgdata(name), "--pgport", strconv.Itoa(port),
			"--name", name, "--monitor", f.monitorURL(), "--dbname", formationDB}, common...)...); err != nil {
			return err
		}
		if err := f.service(name); err != nil {
			return err
		}
		want := map[string]int{"single": 1}
		if i == 1 {
			want = map[string]int{"primary": 1, "secondary": 1}
		}
		if err := f.WaitStates(ctx, want); err != nil {
			return err
		}
	}
	return nil
}

// URL is the multi-host URL of the formation's database, as kld is
// given it: both nodes, and target_session_attrs=read-write so that a
// connection goes to whichever is the primary.
func (f *Formation) URL() string {
	q := url.Values{"target_session_attrs": {"read-write"}, "sslmode": {"disable"}, "connect_timeout": {"2"}}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?%s", f.nodes[0], f.nodes[1], formationDB, q.Encode())
}

// NodeURL is the URL of one node's database (0 or 1), whatever its role.
func (f *Formation) NodeURL(i int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", f.nodes[i], formationDB)
}

// NodeState is one node as the monitor sees it.
type NodeState struct {
	Name     string `json:"nodename"`
	Port     int    `json:"nodeport"`
	Current  string `json:"current_group_state"`
	Assigned string `json:"assigned_group_state"`
}

// States asks the monitor for the state of each node.
func (f *Formation) States(ctx context.Context) ([]NodeState, error) {
	out, err := f.autoctlOutput(ctx, "show", "state", "--pgdata", f.pgdata("monitor"), "--json")
	if err != nil {
		return nil, err
	}
	var nodes []NodeState
	if err := json.Unmarshal(out, &nodes); err != nil {
		return nil, fmt.Errorf("pg_autoctl show state --json: %w: %s", err, out)
	}
	return nodes, nil
}

// WaitStates waits until the nodes' reported and assigned states are, by
// count, want (e.g. {"primary": 1, "secondary": 1}).
func (f *Formation) WaitStates(ctx context.Context, want map[string]int) error {
	var last []NodeState
	for {
		nodes, err := f.States(ctx)
		if err == nil {
			got := map[string]int{}
			for _, n := range nodes {
				if n.Current == n.Assigned {
					got[n.Current]++
				}
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				return nil
			}
			last = nodes
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the formation did not reach %v (last: %+v): %w", want, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Primary returns the index (0 or 1) of the node the monitor has as
// primary.
func (f *Formation) Primary(ctx context.Context) (int, error) {
	nodes, err := f.States(ctx)
	if err != nil {
		return -1, err
	}
	for _, n := range nodes {
		if n.Current == "primary" && n.Assigned == "primary" {
			for i, p := range f.nodes {
				if p == n.Port {
					return i, nil
				}
			}
		}
	}
	return -1, fmt.Errorf("no primary: %+v", nodes)
}

// Failover runs `pg_autoctl perform failover`, which returns once the
// standby is promoted, then waits until the old primary is a standby
// again.
func (f *Formation) Failover(ctx context.Context) error {
	if _, err := f.autoctlOutput(ctx, "perform", "failover", "--pgdata", f.pgdata("monitor"), "--wait", "60"); err != nil {
		return err
	}
	return f.WaitStates(ctx, map[string]int{"primary": 1, "secondary": 1})
}

// Crash kills node i (0 or 1) as a power cut would: its pg_autoctl
// service and its PostgreSQL, with SIGKILL. It stays down; the monitor
// notices within a few seconds (monitorSettings) and, when i was the
// primary, promotes the other node.
func (f *Formation) Crash(i int) error {
	cmd := f.runs[1+i] // runs[0] is the monitor's
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	// PostgreSQL runs in the service's process group; its postmaster.pid
	// names it should it have left the group.
	if b, err := os.ReadFile(filepath.Join(f.pgdata(fmt.Sprintf("node%d", i+1)), "postmaster.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0]); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// WaitWritable waits until node i is the one the monitor lets take writes
// (primary, or wait_primary while it has no standby).
func (f *Formation) WaitWritable(ctx context.Context, i int) error {
	var last []NodeState
	for {
		nodes, err := f.States(ctx)
		if err == nil {
			last = nodes
			for _, n := range nodes {
				if n.Port == f.nodes[i] && n.Current == n.Assigned && (n.Current == "primary" || n.Current == "wait_primary") {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d did not become the primary (last: %+v): %w", i+1, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Events returns the monitor's last n events (`pg_autoctl show events`):
// when each node was assigned and reached each state, which is where a
// failover spends its time.
func (f *Formation) Events(ctx context.Context, n int) (string, error) {
	out, err := f.autoctlOutput(ctx, "show", "events", "--pgdata", f.pgdata("monitor"), "--count", strconv.Itoa(n))
	return string(out), err
}

// autoctlRun runs pg_autoctl to its end, its output appended to logName.
func (f *Formation) autoctlRun(ctx context.Context, logName string, args ...string) error {
	lf, err := f.openLog(logName)
	if err != nil {
		return err
	}
	defer lf.Close()
	fmt.Fprintf(lf, "$ pg_autoctl %s\n", strings.Join(args, " "))
	cmd := f.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg_autoctl %s: %w", strings.Join(args[:2], " "), err)
	}
	return nil
}

// autoctlOutput runs pg_autoctl and returns its standard output.
func (f *Formation) autoctlOutput(ctx context.Context, args ...string) ([]byte, error) {
	cmd := f.command(ctx, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pg_autoctl %s: %w: %s", strings.Join(args[:2], " "), err, lastLines(stderr.String(), 5))
	}
	return out, nil
}

// service starts `pg_autoctl run` of node name, until stop.
func (f *Formation) service(name string) error {
	lf, err := f.openLog(name + ".log")
	if err != nil {
		return err
	}
	cmd := f.command(context.Background(), "run", "--pgdata", f.pgdata(name))
	cmd.Stdout, cmd.Stderr = lf, lf
	err = cmd.Start()
	lf.Close()
	if err != nil {
		return fmt.Errorf("pg_autoctl run %s: %w", name, err)
	}
	f.runs = append(f.runs, cmd)
	return nil
}

// command is pg_autoctl args as the formation's owner, with its
// configuration (which pg_autoctl keeps under XDG_CONFIG_HOME and
// XDG_DATA_HOME) inside the formation's directory.
func (f *Formation) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, f.autoctl, args...)
	cmd.Dir = f.dir
	cmd.Env = append(cleanEnv(),
		"PGHOST=127.0.0.1",
		"XDG_CONFIG_HOME="+filepath.Join(f.dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(f.dir, "share"),
		"XDG_RUNTIME_DIR="+filepath.Join(f.dir, "run"),
	)
	setProcAttr(cmd, f.owner)
	return cmd
}

func (f *Formation) openLog(name string) (*os.File, error) {
	p := filepath.Join(f.dir, name)
	lf, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, err
	}
	if f.owner != nil {
		_ = os.Chown(p, f.owner.uid, f.owner.gid)
	}
	return lf, nil
}

// stop ends the services (SIGTERM, which stops their PostgreSQL; SIGKILL
// to the process group after 20 s), stops any PostgreSQL left behind and
// removes the directory. When the test failed it logs the ends of the
// logs first.
func (f *Formation) stop() {
	if f.tb.Failed() {
		f.tb.Logf("pg_auto_failover formation logs:%s", f.logTail())
	}
	for _, cmd := range f.runs {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range f.runs {
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		// pg_autoctl's sub-processes share its process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	for _, name := range []string{"node1", "node2", "monitor"} {
		if _, err := os.Stat(filepath.Join(f.pgdata(name), "postmaster.pid")); err == nil {
			c := &cluster{dir: f.dir, pgCtl: f.pgCtl, owner: f.owner}
			_ = c.run(f.pgCtl, "-D", f.pgdata(name), "-m", "immediate", "-w", "-t", "30", "stop")
		}
	}
	_ = os.RemoveAll(f.dir)
}

// logTail returns the ends of the formation's logs.
func (f *Formation) logTail() string {
	var b strings.Builder
	for _, name := range []string{"create.log", "monitor.log", "node1.log", "node2.log"} {
		p := filepath.Join(f.dir, name)
		if t := tail(p, 3000); t != "" {
			fmt.Fprintf(&b, "\n--- %s ---\n%s", p, t)
		}
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

package e2e_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pgBackends finds the PostgreSQL server's processes that serve one
// database: its connections, whose process titles name it ("postgres:
// USER DATABASE [local] idle"), not the server's background writers.
type pgBackends struct{ database string }

// postgresBackends returns the backends of the database url names; nil
// for a store that is not PostgreSQL, or a database it cannot tell (a
// schema of a shared one).
func postgresBackends(tb testing.TB, databaseURL string) *pgBackends {
	tb.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil
	}
	if u.Query().Get("search_path") != "" {
		tb.Logf("the test database is a schema of %s, shared: no pg_cpu_ms/commit", u.Path)
		return nil
	}
	return &pgBackends{database: strings.TrimPrefix(u.Path, "/")}
}

// cpu is the CPU time each of the backends has used, by process id.
func (p *pgBackends) cpu(tb testing.TB) map[int]time.Duration {
	tb.Helper()
	if p == nil {
		return nil
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	out := map[int]time.Duration{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		title, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue // gone
		}
		f := strings.Fields(string(bytes.ReplaceAll(title, []byte{0}, []byte{' '})))
		if len(f) < 3 || f[0] != "postgres:" || f[2] != p.database {
			continue
		}
		if c, err := procCPUOf(pid); err == nil {
			out[pid] = c
		}
	}
	return out
}

// cpuSince is the CPU time the backends of after used since before: a
// backend that ended between the two readings is not counted.
func cpuSince(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, c := range after {
		d += c - before[pid]
	}
	return d
}

// fleetProfile fetches a CPU profile of kld over a fleet's cycles
// (KL_FLEET_PROFILE): kld serves its profiles on addr.
type fleetProfile struct {
	addr, path string
	seconds    int
	done       chan error
}

// newFleetProfile returns the profile of the fleet sz on store s, or nil
// unless KL_FLEET_PROFILE names a directory.
func newFleetProfile(tb testing.TB, s store, sz fleetSize) *fleetProfile {
	tb.Helper()
	dir := os.Getenv("KL_FLEET_PROFILE")
	if dir == "" {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return &fleetProfile{
		addr:    addr,
		path:    filepath.Join(dir, fmt.Sprintf("kld-%s-%dx%d.pprof", s.name, sz.states, sz.instances)),
		seconds: envInt(tb, "KL_FLEET_PROFILE_SECONDS", 20),
	}
}

// start begins the profile, fetched as the cycles run, and takes the
// allocations so far.
func (p *fleetProfile) start(tb testing.TB) {
	tb.Helper()
	if p == nil {
		return
	}
	if err := p.fetch("allocs", p.path+".allocs-before"); err != nil {
		tb.Fatalf("KL_FLEET_PROFILE: %v", err)
	}
	p.done = make(chan error, 1)
	go func() { p.done <- p.fetch(fmt.Sprintf("profile?seconds=%d", p.seconds), p.path) }()
}

// fetch writes kld's profile /debug/pprof/what into path.
func (p *fleetProfile) fetch(what, path string) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s", p.addr, what))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET /debug/pprof/%s: %s %.300s", what, resp.Status, msg)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cycled takes the allocations once the cycles ended, then waits for the
// CPU profile (the cycles may end before it does: kld is then idle, which
// a CPU profile does not sample).
func (p *fleetProfile) cycled(tb testing.TB) {
	tb.Helper()
	if p == nil {
		return
	}
	if err := p.fetch("allocs", p.path+".allocs-after"); err != nil {
		tb.Fatalf("KL_FLEET_PROFILE: %v", err)
	}
	if err := <-p.done; err != nil {
		tb.Fatalf("KL_FLEET_PROFILE: %v", err)
	}
	tb.Logf("kld's CPU profile over the cycles: %s (allocations: go tool pprof -sample_index alloc_space -base %[1]s.allocs-before %[1]s.allocs-after)", p.path)
}

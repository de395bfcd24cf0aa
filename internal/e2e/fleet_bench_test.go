package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/tofu"
)

// The fleet goal (issue 27): a fleet of states costs what one state costs.
// With 8 writers each changing 2 instances of a state no other writer
// holds (LOCK → POST → UNLOCK), states of 500 instances picked at random,
// kld's POST p99 at 1,000 states is at most 1.5× that at 10 states and its
// p50 at most 1.2×; its commits/s at 200 states at least 0.9× those of a
// trivial in-memory blob server on the same load; its peak RSS at most
// 300 MB with 1,000 states and 500 MB with 10,000 states of 100 instances.
const fleetWriters = 8

// fleetSize is one fleet of the benchmark: how many states of how many
// instances, on one store or ("") on each.
type fleetSize struct {
	store             string
	states, instances int
}

// fleetSizes are the fleets KL_FLEET_SIZES names ("[STORE:]STATESxINSTANCES"
// separated by spaces or commas), by default those of the issue.
func fleetSizes(tb testing.TB) []fleetSize {
	spec := os.Getenv("KL_FLEET_SIZES")
	if spec == "" {
		spec = "10x500 200x500 1000x500 postgres:10000x100"
	}
	var out []fleetSize
	for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' }) {
		var sz fleetSize
		if st, rest, ok := strings.Cut(f, ":"); ok {
			sz.store, f = st, rest
		}
		a, c, ok := strings.Cut(f, "x")
		var err1, err2 error
		sz.states, err1 = strconv.Atoi(a)
		sz.instances, err2 = strconv.Atoi(c)
		if !ok || err1 != nil || err2 != nil || sz.states < fleetWriters+1 || sz.instances < 2 {
			tb.Fatalf("KL_FLEET_SIZES: %q is not [STORE:]STATESxINSTANCES with more than %d states and at least 2 instances", f, fleetWriters)
		}
		out = append(out, sz)
	}
	return out
}

// fleetRuns keeps figures of earlier sub-benchmarks, so that later ones
// report their ratios: the blob server's commits/s by fleet, kld's POST
// p50 and p99 at 10 states by store and instances.
var fleetRuns sync.Map

// BenchmarkKLDFleet runs the fleet load (see fleet) on the blob server
// and on a real kld on each store, for each fleet of KL_FLEET_SIZES:
// KL_FLEET_COMMITS cycles (default 2000) after the states are created, 8
// writers at once. Reported: commits_per_s, post_p50_ms, post_p99_ms,
// lock_p99_ms, unlock_p99_ms; x_blob, kld's commits/s over the blob
// server's on the same fleet, run just before; post_p50_x10 and
// post_p99_x10, over kld's at 10 states of the same size on the same
// store; kld's peak RSS (rss_MB,
// VmHWM, the states' creation included), its state cache's hit_ratio over
// the cycles, its evictions (of whole states; doc_evictions, of documents
// whose index it kept) and the bytes it held at the end (cache_MB),
// from /metrics; cpu_ms/commit, kld's CPU time (user and system) over the
// cycles per cycle, which other jobs on the machine sway less than times
// and rates; settled_cpu_ms/commit, the same up to when kld last went idle
// (for 3 s) after the cycles, so that the work they left in the background
// (SQLite's text indexer) counts too; bench_cpu_ms/commit, the benchmark's own (its client's, and
// on the blob run the blob server's too); on PostgreSQL pg_cpu_ms/commit, that of the server's
// processes serving kld's database (its connections, not the server's
// background writers); seed_s, how long creating the states took, and
// settle_s, how long kld then stayed busy in the background (SQLite's
// text indexer), which the cycles wait for and do not count unless
// KL_FLEET_SETTLE=0 (then they run during it). Every
// state is then read back and compared with what was last posted.
//
// KL_FLEET_PROFILE=DIR writes a CPU profile of kld over the cycles (the
// first KL_FLEET_PROFILE_SECONDS of them, default 20) into DIR, a file per
// fleet and store, for go tool pprof with the kld binary, and its
// allocations before and after them.
//
// KL_FLEET_KLD runs another build of kld (an earlier commit's) through the
// same load; KL_FLEET_KLD_ARGS adds flags to kld's command line;
// KL_FLEET_STORES picks the stores (default sqlite,postgres);
// KL_FLEET_CLIENT=terraform makes each POST's body as Terraform's CLI
// does, marshalling the whole state (5-7 ms of CPU a cycle of 0.4 MB
// with its HTTP, bench_cpu_ms/commit, on the cores both servers then
// share with their clients), where by
// default the client edits the last body's bytes and costs next to
// nothing; KL_FLEET_CLIENT=tofu makes each cycle with the real OpenTofu
// CLI, `tofu state push` (see fleetCLI: LOCK → GET → POST → UNLOCK, the
// states in OpenTofu's compact form, about 0.33 MB at 500 instances),
// and reports its processes' CPU a cycle, cli_cpu_ms/commit. Run once per
// fleet (make bench-fleet; -count for more runs):
//
//	KL_FLEET_SIZES=10x50,50x50 KL_FLEET_COMMITS=200 go test ./internal/e2e -run '^$' -bench KLDFleet -benchtime 1x
func BenchmarkKLDFleet(b *testing.B) {
	commits := envInt(b, "KL_FLEET_COMMITS", 2000)
	pick := map[string]bool{}
	for _, s := range strings.Split(envOr("KL_FLEET_STORES", "sqlite,postgres"), ",") {
		pick[strings.TrimSpace(s)] = true
	}
	for _, sz := range fleetSizes(b) {
		fleetName := fmt.Sprintf("states=%d/instances=%d", sz.states, sz.instances)
		for _, s := range stores {
			if !pick[s.name] || (sz.store != "" && sz.store != s.name) {
				continue
			}
			// The blob server's run just before each store's: what the
			// machine gives (other jobs, a shared host's cores) drifts
			// over minutes, and x_blob compares runs side by side.
			b.Run(fleetName+"/blob", func(b *testing.B) { runFleetBlob(b, sz, commits) })
			b.Run(fleetName+"/"+s.name, func(b *testing.B) { runFleetKLD(b, s, sz, commits) })
		}
	}
}

// newFleetOf is the fleet of sz on t, its client the one KL_FLEET_CLIENT
// names.
func newFleetOf(tb testing.TB, sz fleetSize, t *fleetTarget) *fleet {
	var f *fleet
	switch c := os.Getenv("KL_FLEET_CLIENT"); c {
	case "", "edit":
		f = newFleet(tb, sz.states, sz.instances)
	case "terraform":
		f = newFleet(tb, sz.states, sz.instances)
		f.encodeAsCLI(tb)
	case "tofu":
		// What OpenTofu posts: its compact form.
		f = newFleetIn(tb, sz.states, sz.instances, graph.FormatCompact)
		f.cli = newFleetCLI(tb, t, fleetWriters)
	default:
		tb.Fatalf("KL_FLEET_CLIENT=%q: give edit (the default), terraform or tofu", c)
	}
	return f
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runFleetBlob(b *testing.B, sz fleetSize, commits int) {
	srv := startBlob(b)
	t := newFleetTarget(func(name string) string { return srv.URL + "/v1/states/" + name })
	f := newFleetOf(b, sz, t)
	ctx := context.Background()
	if err := f.seed(ctx, t, fleetWriters); err != nil {
		b.Fatal(err)
	}
	cpu, self, cli := procCPU(b, srv.PID()), procCPU(b, os.Getpid()), f.cliCPU()
	times, err := f.run(ctx, t, fleetWriters, commits)
	if err != nil {
		b.Fatal(err)
	}
	cpu, self, cli = procCPU(b, srv.PID())-cpu, procCPU(b, os.Getpid())-self, f.cliCPU()-cli
	if err := f.verify(ctx, t, fleetWriters); err != nil {
		b.Fatal(err)
	}
	rate := reportFleetTimes(b, times)
	b.ReportMetric(cpu.Seconds()*1000/float64(commits), "cpu_ms/commit")
	b.ReportMetric(self.Seconds()*1000/float64(commits), "bench_cpu_ms/commit")
	f.reportCLI(b, cli, commits)
	fleetRuns.Store(fmt.Sprintf("blob/%d/%d", sz.states, sz.instances), rate)
}

func runFleetKLD(b *testing.B, s store, sz fleetSize, commits int) {
	bin := os.Getenv("KL_FLEET_KLD")
	if bin == "" {
		bin = tofu.BuildKLD(b)
	}
	url := s.url(b)
	args := append([]string{"--listen", "127.0.0.1:0", "--database", url}, strings.Fields(os.Getenv("KL_FLEET_KLD_ARGS"))...)
	prof := newFleetProfile(b, s, sz)
	if prof != nil {
		args = append(args, "--pprof-listen", prof.addr)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = tofu.CleanEnv("KL_")
	srv := tofu.StartCommand(b, cmd, url)
	if _, err := os.Stat(procStatus(srv.PID())); err != nil {
		b.Skipf("no /proc/PID/status to read kld's peak RSS from: %v", err)
	}
	t := newFleetTarget(srv.StateURL)
	f := newFleetOf(b, sz, t)
	ctx := context.Background()
	begin := time.Now()
	if err := f.seed(ctx, t, fleetWriters); err != nil {
		b.Fatal(err)
	}
	seeded := time.Since(begin)
	// What kld does in the background after the seeding (SQLite's text
	// indexer moving every seeded object into FTS5) is not the cycles'.
	settles := os.Getenv("KL_FLEET_SETTLE") != "0"
	var settled time.Duration
	if settles {
		settled = settle(b, srv.PID())
	}
	before := scrapeMetrics(b, srv.URL)
	pg := postgresBackends(b, url)
	pgBefore := pg.cpu(b)
	cpuBefore, self, cli := procCPU(b, srv.PID()), procCPU(b, os.Getpid()), f.cliCPU()
	prof.start(b)
	times, err := f.run(ctx, t, fleetWriters, commits)
	if err != nil {
		b.Fatal(err)
	}
	cpu, self, cli := procCPU(b, srv.PID())-cpuBefore, procCPU(b, os.Getpid())-self, f.cliCPU()-cli
	pgCPU := cpuSince(pgBefore, pg.cpu(b))
	prof.cycled(b)
	// What the cycles left kld to do in the background (SQLite's text
	// indexer moves their objects into FTS5 a few seconds after them).
	var cpuAll time.Duration
	if settles {
		_, busy := settleFor(b, srv.PID(), fleetAfterIdle)
		cpuAll = busy - cpuBefore
	}
	rss := vmHWM(b, srv.PID())
	after := scrapeMetrics(b, srv.URL)
	if err := f.verify(ctx, t, fleetWriters); err != nil {
		b.Fatal(err)
	}

	rate := reportFleetTimes(b, times)
	b.ReportMetric(cpu.Seconds()*1000/float64(commits), "cpu_ms/commit")
	if cpuAll > 0 {
		b.ReportMetric(cpuAll.Seconds()*1000/float64(commits), "settled_cpu_ms/commit")
	}
	b.ReportMetric(self.Seconds()*1000/float64(commits), "bench_cpu_ms/commit")
	f.reportCLI(b, cli, commits)
	if pg != nil {
		b.ReportMetric(pgCPU.Seconds()*1000/float64(commits), "pg_cpu_ms/commit")
	}
	b.ReportMetric(seeded.Seconds(), "seed_s")
	b.ReportMetric(settled.Seconds(), "settle_s")
	b.ReportMetric(rss, "rss_MB")
	if blob, ok := fleetRuns.Load(fmt.Sprintf("blob/%d/%d", sz.states, sz.instances)); ok {
		b.ReportMetric(rate/blob.(float64), "x_blob")
	}
	p50, p99 := percentile(times.post, 50), percentile(times.post, 99)
	key := fmt.Sprintf("%s/%d", s.name, sz.instances)
	if sz.states == 10 {
		fleetRuns.Store(key, [2]float64{p50, p99})
	} else if small, ok := fleetRuns.Load(key); ok {
		b.ReportMetric(p50/small.([2]float64)[0], "post_p50_x10")
		b.ReportMetric(p99/small.([2]float64)[1], "post_p99_x10")
	}
	hits, ok1 := after.delta(before, "kl_state_cache_hits_total")
	misses, ok2 := after.delta(before, "kl_state_cache_misses_total")
	if !ok1 || !ok2 {
		b.Logf("kld exports no state cache metrics (an earlier build?): no hit ratio")
		return
	}
	if hits+misses > 0 {
		b.ReportMetric(hits/(hits+misses), "hit_ratio")
	}
	evicted, _ := after.delta(before, "kl_state_cache_evictions_total")
	docsEvicted, _ := after.delta(before, "kl_state_cache_document_evictions_total")
	b.ReportMetric(evicted, "evictions")
	b.ReportMetric(docsEvicted, "doc_evictions")
	b.ReportMetric(after["kl_state_cache_bytes"]/(1<<20), "cache_MB")
}

// fleetAfterIdle is how many idle half seconds in a row settle waits for
// after the cycles: longer than SQLite's text indexer waits after a write
// (store/sqlite textDelay) before it moves what the write queued.
const fleetAfterIdle = 6

// settle waits until process pid is idle: less than 2% of a core over
// each of two half seconds in a row. It returns how long that took.
func settle(b *testing.B, pid int) time.Duration {
	took, _ := settleFor(b, pid, 2)
	return took
}

// settleFor is settle, idle over n half seconds in a row; busy is pid's
// CPU time when it went idle.
func settleFor(b *testing.B, pid, n int) (took, busy time.Duration) {
	b.Helper()
	begin := time.Now()
	idle, last := 0, procCPU(b, pid)
	busy = last
	for idle < n {
		time.Sleep(500 * time.Millisecond)
		now := procCPU(b, pid)
		if now-last <= 10*time.Millisecond {
			idle++
		} else {
			idle, busy = 0, now
		}
		last = now
		if time.Since(begin) > 10*time.Minute {
			b.Fatalf("kld still busy %s after the seeding", time.Since(begin).Round(time.Second))
		}
	}
	return time.Since(begin), busy
}

// reportFleetTimes reports what every target's run reports and returns
// its commits per second.
func reportFleetTimes(b *testing.B, times *fleetTimes) float64 {
	rate := float64(times.commits) / times.elapsed.Seconds()
	b.ReportMetric(rate, "commits_per_s")
	b.ReportMetric(percentile(times.post, 50), "post_p50_ms")
	b.ReportMetric(percentile(times.post, 99), "post_p99_ms")
	b.ReportMetric(percentile(times.lock, 99), "lock_p99_ms")
	b.ReportMetric(percentile(times.unlock, 99), "unlock_p99_ms")
	return rate
}

// promSamples are the unlabelled samples of a /metrics answer, by name.
type promSamples map[string]float64

// scrapeMetrics reads kld's /metrics.
func scrapeMetrics(tb testing.TB, base string) promSamples {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /metrics: %s", resp.Status)
	}
	out := promSamples{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.ContainsRune(name, '{') {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// delta is how much the counter name grew since before; false when it is
// not exported.
func (after promSamples) delta(before promSamples, name string) (float64, bool) {
	v, ok := after[name]
	return v - before[name], ok
}

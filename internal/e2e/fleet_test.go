package e2e_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/internal/tofu"
)

// TestFleetHarness is a small run of the fleet benchmark's load (see
// BenchmarkKLDFleet), on a real kld on each store whose state cache
// (--state-cache at its least) is smaller than the fleet, so that most
// writes find their state let go of and diff against the hashes the
// store reads (kilolock.IndexReader): every cycle lands (each state reads
// back as last posted, and kld counted each commit), the cache's series
// are on /metrics, it missed, let go of documents and stayed within its
// budget; the blob server passes the same check, its client encoding each
// body as Terraform's CLI does (the same bytes).
func TestFleetHarness(t *testing.T) {
	t.Parallel()
	// The indexes of 96 states of 400 instances (some 45 KB each) are
	// four times the cache: most writes find their state let go of.
	const states, instances, commits = 96, 400, 150
	ctx := context.Background()

	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			fleetOnKLD(t, s, states, instances, commits)
		})
	}

	// The blob server, its client encoding each body as Terraform does:
	// the bytes the edits make.
	blob := httptest.NewServer(newBlobServer())
	defer blob.Close()
	onBlob := newFleetTarget(func(name string) string { return blob.URL + "/v1/states/" + name })
	g := newFleet(t, states, instances)
	g.encodeAsCLI(t)
	if err := g.seed(ctx, onBlob, fleetWriters); err != nil {
		t.Fatal(err)
	}
	if _, err := g.run(ctx, onBlob, fleetWriters, commits); err != nil {
		t.Fatal(err)
	}
	if err := g.verify(ctx, onBlob, fleetWriters); err != nil {
		t.Fatal(err)
	}
	for i := range g.states {
		encoded, err := g.post(&g.states[i])
		if err != nil {
			t.Fatal(err)
		}
		if edited, _ := g.doc(&g.states[i]); !bytes.Equal(encoded, edited) {
			t.Fatalf("state %d: the body encoded as the CLI does is not the one edited", i)
		}
	}
}

// fleetOnKLD is TestFleetHarness on a kld on store s.
func fleetOnKLD(t *testing.T, s store, states, instances, commits int) {
	ctx := context.Background()
	srv := tofu.StartKLD(t, s.url(t), "--state-cache", "1MiB")
	target := newFleetTarget(srv.StateURL)
	f := newFleet(t, states, instances)
	if err := f.seed(ctx, target, fleetWriters); err != nil {
		t.Fatal(err)
	}
	before := scrapeMetrics(t, srv.URL)
	times, err := f.run(ctx, target, fleetWriters, commits)
	if err != nil {
		t.Fatal(err)
	}
	if times.commits != commits || len(times.post) != commits {
		t.Fatalf("%d cycles made, %d POSTs timed; want %d", times.commits, len(times.post), commits)
	}
	if err := f.verify(ctx, target, fleetWriters); err != nil {
		t.Fatal(err)
	}
	after := scrapeMetrics(t, srv.URL)
	if got := labelled(t, srv.URL, `kl_commits_total{source="apply"}`); got != float64(commits) {
		t.Errorf("kld counted %v commits under a lock, want %d", got, commits)
	}
	hits, ok1 := after.delta(before, "kl_state_cache_hits_total")
	misses, ok2 := after.delta(before, "kl_state_cache_misses_total")
	docs, ok3 := after.delta(before, "kl_state_cache_document_evictions_total")
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("/metrics lacks the state cache's series: %v", after)
	}
	t.Logf("%v hits, %v misses, %v documents let go of", hits, misses, docs)
	if hits+misses < float64(commits) || docs == 0 || misses < float64(commits)/2 {
		t.Errorf("the cycles made %v hits and %v misses (want at least %d in all, half of them misses) and let go of %v documents (want some)", hits, misses, commits, docs)
	}
	if held, limit := after["kl_state_cache_bytes"], after["kl_state_cache_limit_bytes"]; limit != 1<<20 || held > limit || held == 0 {
		t.Errorf("the cache holds %v bytes of a budget of %v, want within 1MiB", held, limit)
	}
}

// labelled reads one labelled sample of kld's /metrics (its exact name
// and labels as the text format writes them); 0 when there is none.
func labelled(t *testing.T, base, series string) float64 {
	t.Helper()
	body, err := newFleetTarget(nil).get(context.Background(), base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	return 0
}

// TestFleetCLI is a small run of the fleet's load with the real OpenTofu
// CLI as its client (KL_FLEET_CLIENT=tofu): each cycle is `tofu state
// push` of the state's next version, through the proxy that times its
// requests, on a real kld on SQLite and on the blob server. Every cycle is
// timed (LOCK, POST and UNLOCK each seen once), tofu's CPU is counted,
// and every state reads back as tofu last posted it: its compact form,
// with the serial after the pushed file's.
func TestFleetCLI(t *testing.T) {
	t.Parallel()
	const states, instances, commits = 12, 20, 16
	ctx := context.Background()
	blob := httptest.NewServer(newBlobServer())
	defer blob.Close()
	srv := tofu.StartKLD(t, sqliteURL(t))
	targets := map[string]*fleetTarget{
		"blob": newFleetTarget(func(name string) string { return blob.URL + "/v1/states/" + name }),
		"kld":  newFleetTarget(srv.StateURL),
	}
	for name, target := range targets {
		f := newFleetIn(t, states, instances, graph.FormatCompact)
		f.cli = newFleetCLI(t, target, 2)
		if err := f.seed(ctx, target, 2); err != nil {
			t.Fatal(err)
		}
		times, err := f.run(ctx, target, 2, commits)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if times.commits != commits || len(times.lock) != commits || len(times.post) != commits || len(times.unlock) != commits {
			t.Fatalf("%s: %d cycles, %d/%d/%d LOCK/POST/UNLOCK timed; want %d each", name, times.commits, len(times.lock), len(times.post), len(times.unlock), commits)
		}
		if f.cliCPU() <= 0 {
			t.Errorf("%s: tofu's CPU time not counted", name)
		}
		if err := f.verify(ctx, target, 2); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var serials uint64
		for i := range f.states {
			serials += f.states[i].serial - f.series.Serial()
		}
		if serials != 2*commits {
			t.Errorf("%s: the states' serials rose by %d in all, want %d (two a push: the file's, then tofu's)", name, serials, 2*commits)
		}
	}
}

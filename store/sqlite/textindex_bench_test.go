package sqlite

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
)

// BenchmarkTextIndexSteady is the text indexer's CPU per commit in steady
// traffic: a fleet of 20 states of 500 objects, all indexed, then commits
// of 2 changed objects each (1,000 an op), moved into the index every 100
// (the indexer's textDelay at 100 commits/s) in batches of textBatch rows
// (batches, as before) or in one pass, with FTS5's deletemerge at 10 (its
// default), 30 (the schema's since migration 25) or 0. The objects' text
// is random letters, as the fleet benchmark's (internal/e2e
// BenchmarkKLDFleet) and graphtest's, the index's worst case.
// index-cpu-ms/commit is the process's CPU time in the indexer per
// commit, index-pages the index's pages at the end.
func BenchmarkTextIndexSteady(b *testing.B) {
	const states, instances = 20, 500
	for _, v := range []struct {
		name        string
		pass        bool
		deletemerge int
	}{
		{"batches/deletemerge=10", false, 10}, // before: FTS5's default
		{"pass/deletemerge=10", true, 10},
		{"pass/deletemerge=30", true, 30}, // migrations/0025
		{"pass/deletemerge=0", true, 0},   // never for deletes alone
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := b.Context()
			s := openAt(b, filepath.Join(b.TempDir(), "kl.db"))
			// The benchmark moves the queue itself.
			s.d.text.stop()
			<-s.d.text.done
			if _, err := s.d.write.db.ExecContext(ctx, `INSERT INTO instance_text (instance_text, rank) VALUES ('deletemerge', ?)`, v.deletemerge); err != nil {
				b.Fatal(err)
			}
			serial := make([]uint64, states)
			commit := func(st int, upserts ...graph.Instance) {
				serial[st]++
				c := &kilolock.Commit{Parent: int64(serial[st] - 1), Version: kilolock.Version{Serial: serial[st], Lineage: "bench", Format: "compact"}, Upserts: upserts}
				if _, _, err := s.Commit(ctx, fmt.Sprintf("fleet-%03d", st), c); err != nil {
					b.Fatal(err)
				}
			}
			for st := range states {
				var all []graph.Instance
				for i := range instances {
					all = append(all, randomTextInstance(b, i, 0))
				}
				commit(st, all...)
			}
			if err := s.d.flushText(ctx); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var cpu time.Duration
			n := 0
			for b.Loop() {
				for range 10 {
					for range 100 {
						n++
						commit(rng.IntN(states), randomTextInstance(b, rng.IntN(instances), n), randomTextInstance(b, rng.IntN(instances), n))
					}
					start := processCPUTime()
					for more, pass := true, v.pass; more; pass = false {
						var err error
						if more, _, err = s.d.indexTextBatch(ctx, pass); err != nil {
							b.Fatal(err)
						}
					}
					cpu += processCPUTime() - start
				}
			}
			b.ReportMetric(cpu.Seconds()*1000/float64(n), "index-cpu-ms/commit")
			var pages int
			if err := s.d.write.db.QueryRowContext(ctx, `SELECT count(*) FROM instance_text_data`).Scan(&pages); err != nil { // a row a page
				b.Fatal(err)
			}
			b.ReportMetric(float64(pages), "index-pages")
		})
	}
}

// processCPUTime is the CPU time the process has used (sqlite_test has
// processCPU, in a package of its own).
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// randomTextInstance is object i of a fleet state at revision rev, its
// text random letters (about 430 distinct trigrams).
func randomTextInstance(tb testing.TB, i, rev int) graph.Instance {
	tb.Helper()
	rng := rand.New(rand.NewPCG(uint64(i), uint64(rev)))
	p := make([]byte, 430)
	for k := range p {
		p[k] = 'a' + byte(rng.IntN(26))
	}
	obj := fmt.Sprintf(`{"index_key":%d,"schema_version":0,"attributes":{"id":"%08x-%04x","input":{"value":"%s","type":"string"}},"sensitive_attributes":[]}`, i, rng.Uint32(), i&0xffff, p)
	inst, err := graph.NewInstance(graph.Resource{Mode: "managed", Type: "terraform_data", Name: "fleet", Provider: `provider["terraform.io/builtin/terraform"]`}, []byte(obj))
	if err != nil {
		tb.Fatal(err)
	}
	return inst
}

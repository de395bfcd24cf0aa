package storetest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/inventory"
)

// inventoryTypes are the resource types of the benchmark's fleet, one
// instance in len of each.
var inventoryTypes = []string{"aws_instance", "aws_subnet", "aws_security_group", "aws_s3_bucket", "aws_iam_role",
	"aws_route53_record", "aws_lb", "aws_ebs_volume", "aws_eip", "aws_lambda_function"}

// BenchInventory measures the inventory across states on s, seeded with
// KL_BENCH_STATES states (default 1,000) of KL_BENCH_INSTANCES instances
// (default 1,000) each, of about 300 bytes of attributes: a search by a
// type each state holds one instance of (aws_rare, a page of 100 hits),
// by type of a common type (the first page), by a text one instance
// holds, and the duplicates (one object recorded by two states in every
// hundred). It reports the seeding's time, and the Go heap after each
// operation as heap-MB, which must not grow with the fleet.
func BenchInventory(b *testing.B, s kilolock.Store) {
	states, perState := envInt("KL_BENCH_STATES", 1000), envInt("KL_BENCH_INSTANCES", 1000)
	is := inventoryStore(b, s)
	ctx := context.Background()
	start := time.Now()
	for st := range states {
		name := fmt.Sprintf("fleet-%04d", st)
		c := &kilolock.Commit{Version: kilolock.Version{Serial: 1, Lineage: lineage, TerraformVersion: "1.9.0", Source: kilolock.SourcePush, Actor: "bench", Format: "compact"}}
		for i := range perState - 1 {
			typ := inventoryTypes[i%len(inventoryTypes)]
			id := fmt.Sprintf("%s-%04d-%05d", typ, st, i)
			if i == 0 && st%100 == 1 {
				id = fmt.Sprintf("%s-%04d-%05d", typ, st-1, i) // the same object as the state before's
			}
			c.Upserts = append(c.Upserts, instance(b, resource(typ, "r"), intKey(int64(i)),
				fmt.Sprintf(`{"id":%q,"ami":"ami-%03d","tags":{"Name":"web-%d","team":"team-%d"},"subnet_id":"subnet-%04d","user_data":"%s"}`,
					id, i%50, i, st%20, st, fleetPad[:150])))
		}
		c.Upserts = append(c.Upserts, instance(b, resource("aws_rare", "one"), graph.IndexKey{}, fmt.Sprintf(`{"id":"rare-%04d"}`, st)))
		if _, _, err := s.Commit(ctx, name, c); err != nil {
			b.Fatalf("seed %s: %v", name, err)
		}
	}
	b.Logf("seeded %d states x %d instances in %s", states, perState, time.Since(start).Round(time.Millisecond))
	// A store that indexes text after its writes (SQLite's text indexer)
	// indexes what is left first: the searches below are those of a store
	// whose index has caught up. Until it has, a search by text also
	// checks each object still queued.
	if ix, ok := s.(interface{ IndexText(context.Context) error }); ok {
		start := time.Now()
		if err := ix.IndexText(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("indexed what was left of their text in %s", time.Since(start).Round(time.Millisecond))
	}

	search := func(f inventory.Filters, want int) func(b *testing.B) {
		return func(b *testing.B) {
			q, err := inventory.ParseQuery(f)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				p, err := inventory.Search(ctx, is, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Hits) != want {
					b.Fatalf("%+v: %d hits, want %d", f, len(p.Hits), want)
				}
			}
			reportHeap(b)
		}
	}
	b.Run("TypeRare", search(inventory.Filters{Type: "aws_rare"}, min(states, inventory.DefaultLimit)))
	b.Run("TypeCommon", search(inventory.Filters{Type: "aws_s3_bucket"}, inventory.DefaultLimit))
	b.Run("AddressModuleless", search(inventory.Filters{Address: "aws_rare.one"}, min(states, inventory.DefaultLimit)))
	b.Run("Attr", search(inventory.Filters{Type: "aws_instance", Attr: []string{"tags.Name=web-10"}}, min(states, inventory.DefaultLimit)))
	b.Run("Text", search(inventory.Filters{Text: fmt.Sprintf("aws_eip-%04d-%05d", states/2, 8)}, 1))
	b.Run("Duplicates", func(b *testing.B) {
		for b.Loop() {
			d, err := inventory.Duplicates(ctx, is, nil, "")
			if err != nil {
				b.Fatal(err)
			}
			if want := (states + 98) / 100; len(d) != want { // the states st%100 == 1
				b.Fatalf("%d duplicates, want %d", len(d), want)
			}
		}
		reportHeap(b)
	})
}

func reportHeap(b *testing.B) {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MB")
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

package kilolock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// tofuStates are states written by the real OpenTofu (graph's fixtures,
// with keys and values that need escapes) and a 1,000-instance state in
// OpenTofu's layout.
func tofuStates(t testing.TB) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{"generated-1000": graphtest.Generate(1000, 1024, graph.FormatCompact)}
	for _, name := range []string{"basic", "escapes", "sensitive"} {
		b, err := os.ReadFile(filepath.Join("graph", "testdata", name, "terraform.tfstate"))
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = b
	}
	return docs
}

func lockFor(t testing.TB, e *kilolock.Engine, name, id string) {
	t.Helper()
	if _, err := e.Lock(context.Background(), name, kilolock.LockInfo{ID: id, Operation: "OperationTypeApply", Who: id}); err != nil {
		t.Fatalf("lock %s: %v", id, err)
	}
}

// assertServes checks that e and a fresh engine on the same store (which
// must rebuild the version from the database) serve version number of
// state name as want, byte for byte.
func assertServes(t testing.TB, e *kilolock.Engine, st kilolock.Store, name string, number int64, want []byte) {
	t.Helper()
	ctx := context.Background()
	for which, eng := range map[string]*kilolock.Engine{"the writing engine": e, "a fresh engine": kilolock.NewEngine(st, kilolock.Options{})} {
		d, err := eng.ReadVersion(ctx, name, number)
		if err != nil {
			t.Fatalf("%s: read @%d: %v", which, number, err)
		}
		if !bytes.Equal(d.Bytes, want) {
			t.Fatalf("%s serves @%d as %d bytes, not the %d posted:\n%.300q\nwant\n%.300q", which, number, len(d.Bytes), len(want), d.Bytes, want)
		}
	}
	if cur, err := kilolock.NewEngine(st, kilolock.Options{}).Read(ctx, name); err == nil && cur.Version.Number == number && !bytes.Equal(cur.Bytes, want) {
		t.Fatalf("GET of the current version @%d is not what was posted", number)
	}
}

// TestRespelledPostIsUnchanged is issue 11's first case: a tofu-written
// state re-serialized by Python (sorted keys, two spaces), jq -S and Go's
// encoding/json on a map, and POSTed back under a lock, changes no
// instance and no output and writes O(1) rows (the version, the posted
// bytes, the state's pointer); GET still answers the posted bytes, also
// from a fresh engine. The CLI's next write after it costs two rows and
// keeps no bytes: what the rows hold is still the CLI's spelling.
func TestRespelledPostIsUnchanged(t *testing.T) {
	ctx := context.Background()
	enginetest.EachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(store, func(t *testing.T) {
			st := open(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			for docName, doc := range tofuStates(t) {
				for _, rs := range graphtest.Respellings {
					t.Run(docName+"/"+rs.Name, func(t *testing.T) {
						name := docName + "-" + rs.Name
						first := enginetest.Write(t, e, name, doc)
						lockFor(t, e, name, "respell")
						body := rs.Apply(t, graphtest.BumpSerial(t, doc))
						if bytes.Equal(body, graphtest.BumpSerial(t, doc)) {
							t.Fatal("the re-serialization is byte-identical: the test proves nothing")
						}
						res, err := e.Write(ctx, name, body, kilolock.WriteOptions{LockID: "respell"})
						if err != nil {
							t.Fatalf("POST of the %s re-serialization: %v", rs.Name, err)
						}
						v := res.Version
						if v.Added+v.Changed+v.Removed != 0 || res.Unchanged {
							t.Fatalf("re-serialized by %s: +%d ~%d -%d (unchanged %v); want a version with no change", rs.Name, v.Added, v.Changed, v.Removed, res.Unchanged)
						}
						if res.Stats.Rows > 3 {
							t.Fatalf("re-serialized by %s: %d rows; want at most 3", rs.Name, res.Stats.Rows)
						}
						t.Logf("%s (%d instances, %d bytes) re-serialized by %s: %d rows, %d bytes (first write: %d rows)",
							docName, first.Version.Instances, len(body), rs.Name, res.Stats.Rows, res.Stats.Bytes, first.Stats.Rows)
						assertServes(t, e, st, name, v.Number, body)
						diff, err := history.Diff(ctx, e, name, enginetest.MustRef(t, "@1"), enginetest.MustRef(t, fmt.Sprintf("@%d", v.Number)))
						if err != nil || !diff.Empty() {
							t.Fatalf("kl diff @1 @%d: %+v (%v)", v.Number, diff, err)
						}
						if _, err := e.Unlock(ctx, name, "respell", false); err != nil {
							t.Fatal(err)
						}

						raws := enginetest.RawVersions(t, st)
						again := graphtest.BumpSerial(t, graphtest.BumpSerial(t, doc))
						next := enginetest.Write(t, e, name, again)
						if n := next.Version; n.Added+n.Changed+n.Removed != 0 || next.Stats.Rows > 2 || enginetest.RawVersions(t, st) != raws {
							t.Fatalf("the CLI's write after the re-serialized one: +%d ~%d -%d, %d rows, kept bytes %v", n.Added, n.Changed, n.Removed, next.Stats.Rows, enginetest.RawVersions(t, st) != raws)
						}
						assertServes(t, e, st, name, next.Version.Number, again)
						assertServes(t, e, st, name, v.Number, body)
					})
				}
			}
		})
	})
}

// TestRespelledPostWithChanges: a re-serialized state that also changes 5
// instances changes exactly those 5; the CLI's next write, which spells
// those 5 its own way again and changes 2 more, changes exactly 2 and keeps
// the posted bytes as a small delta (not a copy of the state); an instance
// changed back to an earlier value, whose bytes the store already holds,
// is served in the bytes of the write that sent it. Every version reads
// back byte for byte from a fresh engine.
func TestRespelledPostWithChanges(t *testing.T) {
	enginetest.EachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(store, func(t *testing.T) {
			st := open(t)
			e := kilolock.NewEngine(st, kilolock.Options{})
			const n = 1000
			v1 := graphtest.Generate(n, 1024, graph.FormatCompact)
			enginetest.Write(t, e, "s", v1)

			five := []int{3, 250, 500, 750, 999}
			v2 := graphtest.Python(t, graphtest.Change(v1, five, graph.FormatCompact))
			res := enginetest.Write(t, e, "s", v2)
			if res.Version.Changed != 5 || res.Version.Added+res.Version.Removed != 0 {
				t.Fatalf("re-serialized with 5 changes: +%d ~%d -%d", res.Version.Added, res.Version.Changed, res.Version.Removed)
			}
			t.Logf("re-serialized, 5 changed: %d rows, %d bytes", res.Stats.Rows, res.Stats.Bytes)

			v3 := graphtest.Change(graphtest.Change(v1, five, graph.FormatCompact), []int{10, 20}, graph.FormatCompact)
			res = enginetest.Write(t, e, "s", v3)
			if res.Version.Changed != 2 || res.Version.Added+res.Version.Removed != 0 {
				t.Fatalf("the CLI's next write: +%d ~%d -%d, want ~2", res.Version.Added, res.Version.Changed, res.Version.Removed)
			}
			// 2 changed instances (3 rows and ~1 KB each), the version, the
			// state's pointer and the kept bytes: a delta of about the 5
			// objects the rows still spell as Python did.
			if res.Stats.Rows > 9 || res.Stats.Bytes > 32<<10 {
				t.Fatalf("the CLI's next write cost %d rows and %d bytes (the state is %d bytes); want at most 9 rows and 32 KB", res.Stats.Rows, res.Stats.Bytes, len(v3))
			}
			t.Logf("the CLI's next write, 2 changed, 5 spelled otherwise in the rows: %d rows, %d bytes", res.Stats.Rows, res.Stats.Bytes)

			// Instance 250 changes back to its first value (bytes the store
			// holds since @1), in Terraform's layout this time.
			s4, err := graphtest.Decode(v3)
			if err != nil {
				t.Fatal(err)
			}
			s1, _ := graphtest.Decode(v1)
			setInstance(t, s4, s1, 250)
			s4.Serial++
			v4 := graphtest.Encode(s4, graph.FormatIndent)
			if res := enginetest.Write(t, e, "s", v4); res.Version.Changed != 1 {
				t.Fatalf("changing one instance back: ~%d, want 1", res.Version.Changed)
			}
			for i, doc := range [][]byte{v1, v2, v3, v4} {
				assertServes(t, e, st, "s", int64(i+1), doc)
			}
		})
	})
}

// setInstance sets the attributes of the i-th instance of dst to src's.
func setInstance(t testing.TB, dst, src *graphtest.StateV4, i int) {
	t.Helper()
	var all [2][]*graphtest.InstanceV4
	for k, s := range []*graphtest.StateV4{dst, src} {
		for ri := range s.Resources {
			for ii := range s.Resources[ri].Instances {
				all[k] = append(all[k], &s.Resources[ri].Instances[ii])
			}
		}
	}
	all[0][i].Attributes = all[1][i].Attributes
}

// TestOptimisticRespelledWriters is issue 11's optimistic case: 8 writers
// hold optimistic locks on one 1,000-instance state; each changes 5
// instances nobody else changes and sends its whole state re-serialized
// (by Python, jq or Go), through two engines at once. All 8 commit, none is
// refused, and the result holds every writer's changes and nothing else.
func TestOptimisticRespelledWriters(t *testing.T) {
	ctx := context.Background()
	enginetest.EachStore(t, func(t *testing.T, store string, open func(testing.TB) kilolock.Store) bool {
		return t.Run(store, func(t *testing.T) {
			st := open(t)
			engines := []*kilolock.Engine{kilolock.NewEngine(st, kilolock.Options{}), kilolock.NewEngine(st, kilolock.Options{})}
			const n, writers = 1000, 8
			base := graphtest.Generate(n, 1024, graph.FormatCompact)
			if err := engines[0].SetLockMode(ctx, "shared", kilolock.LockOptimistic); err != nil {
				t.Fatal(err)
			}
			enginetest.Write(t, engines[0], "shared", base)
			mine := func(w int) []int {
				var idx []int
				for j := range 5 {
					idx = append(idx, w+writers*j*23)
				}
				return idx
			}
			bodies := make([][]byte, writers)
			for w := range writers {
				lockFor(t, engines[w%2], "shared", fmt.Sprintf("writer-%d", w))
				rs := graphtest.Respellings[w%len(graphtest.Respellings)]
				bodies[w] = rs.Apply(t, graphtest.Change(base, mine(w), graph.FormatCompact))
			}
			var wg sync.WaitGroup
			errs := make([]error, writers)
			results := make([]*kilolock.WriteResult, writers)
			for w := range writers {
				wg.Go(func() {
					results[w], errs[w] = engines[w%2].Write(ctx, "shared", bodies[w], kilolock.WriteOptions{LockID: fmt.Sprintf("writer-%d", w)})
				})
			}
			wg.Wait()
			for w, err := range errs {
				var ce *kilolock.ConflictError
				if errors.As(err, &ce) {
					t.Errorf("writer %d refused: %s (%v)", w, ce.Message, ce.Addresses)
				} else if err != nil {
					t.Errorf("writer %d: %v", w, err)
				} else if v := results[w].Version; v.Changed != 5 || v.Added+v.Removed != 0 {
					t.Errorf("writer %d committed +%d ~%d -%d, want ~5", w, v.Added, v.Changed, v.Removed)
				}
			}
			if rej, err := history.Rejections(ctx, engines[0], "shared", 0); err != nil || len(rej) != 0 {
				t.Fatalf("rejections: %v (%v)", rej, err)
			}

			got := enginetest.ReadGraph(t, kilolock.NewEngine(st, kilolock.Options{}), "shared")
			want, err := graph.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			for w := range writers {
				theirs, err := graph.Parse(graphtest.Change(base, mine(w), graph.FormatCompact))
				if err != nil {
					t.Fatal(err)
				}
				for _, i := range mine(w) {
					want.Instances[i] = theirs.Instances[i]
				}
			}
			if d := graph.Diff(want, got); !d.Empty() {
				t.Fatalf("the result is not the base with every writer's changes: %+v", d)
			}
		})
	})
}

// TestNumberSpellings: a number spelled otherwise (1.0 as 1, 2^53+1 with a
// fraction of zero) is no change; 2^53+1 written back as 2^53, which is
// what decoding into a float64 does, is one changed instance, and kl diff
// names that one attribute, not the re-spelled number beside it.
func TestNumberSpellings(t *testing.T) {
	e := enginetest.SQLiteEngine(t)
	doc := func(serial int, big, small string) []byte {
		return []byte(fmt.Sprintf(`{"version":4,"terraform_version":"1.10.10","serial":%d,"lineage":"l","outputs":{"n":{"value":%s,"type":"number"}},"resources":[`+
			`{"mode":"managed","type":"terraform_data","name":"big","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"id":"b","input":{"value":%s,"type":"number"},"ratio":%s},"sensitive_attributes":[]}]},`+
			`{"mode":"managed","type":"terraform_data","name":"small","provider":"provider[\"terraform.io/builtin/terraform\"]","instances":[{"schema_version":0,"attributes":{"id":"s","input":{"value":%s,"type":"number"}},"sensitive_attributes":[]}]}`+
			`],"check_results":null}`+"\n", serial, small, big, small, small))
	}
	enginetest.Write(t, e, "n", doc(1, "9007199254740993", "1.0"))
	if res := enginetest.Write(t, e, "n", doc(2, "9007199254740993.0", "1")); res.Version.Changed != 0 {
		t.Fatalf("numbers spelled otherwise: ~%d, want no change", res.Version.Changed)
	}
	res := enginetest.Write(t, e, "n", doc(3, "9007199254740992", "1e0"))
	if res.Version.Changed != 1 {
		t.Fatalf("2^53+1 written as 2^53: ~%d, want 1", res.Version.Changed)
	}
	diff, err := history.Diff(context.Background(), e, "n", enginetest.MustRef(t, "@1"), enginetest.MustRef(t, "@3"))
	if err != nil {
		t.Fatal(err)
	}
	if len(diff.Changed) != 1 || diff.Changed[0].Address != "terraform_data.big" || len(diff.Changed[0].Changes) != 1 ||
		diff.Changed[0].Changes[0].Path != "attributes.input.value" || len(diff.OutputsChanged) != 0 {
		t.Fatalf("kl diff @1 @3 = %+v, want only terraform_data.big attributes.input.value", diff.ChangeSet)
	}
}

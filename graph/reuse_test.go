package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

var identical = cmp.Options{cmp.AllowUnexported(graph.Instance{}), byteSlices}

// byteSlices compares []byte fields quickly (cmp would go byte by byte),
// still telling nil from empty.
var byteSlices = cmp.Comparer(func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) })

func parse(t testing.TB, data []byte) *graph.State {
	t.Helper()
	st, err := graph.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return st
}

// checkReusing asserts ParseReusing(data, prev) ≡ Parse(data) and returns
// how many instances were taken over from prev.
func checkReusing(t testing.TB, data []byte, prev *graph.State) (*graph.State, int) {
	t.Helper()
	want, werr := graph.Parse(data)
	got, gerr := graph.ParseReusing(data, prev)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("Parse error %v, ParseReusing error %v", werr, gerr)
	}
	if werr != nil {
		return nil, 0
	}
	if !reflect.DeepEqual(want, got) { // cmp.Diff only to explain: it is slow
		t.Fatalf("ParseReusing differs from Parse (-Parse +ParseReusing):\n%s", cmp.Diff(want, got, identical))
	}
	return got, shared(prev, got)
}

// shared counts instances of next whose Object is the very same memory as
// one of prev's: taken over rather than parsed again.
func shared(prev, next *graph.State) int {
	if prev == nil {
		return 0
	}
	seen := map[*byte]bool{}
	for i := range prev.Instances {
		if o := prev.Instances[i].Object; len(o) > 0 {
			seen[unsafe.SliceData(o)] = true
		}
	}
	n := 0
	for i := range next.Instances {
		if o := next.Instances[i].Object; len(o) > 0 && seen[unsafe.SliceData(o)] {
			n++
		}
	}
	return n
}

func fixtureFiles(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "terraform*.tfstate"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return paths
}

func TestParseReusingFixtures(t *testing.T) {
	paths := fixtureFiles(t)
	var docs [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
	}
	for i, data := range docs {
		self := parse(t, data)
		// From itself: everything is reused.
		got, n := checkReusing(t, data, self)
		if n != len(self.Instances) {
			t.Errorf("%s: reused %d of %d instances of an identical document", paths[i], n, len(self.Instances))
		}
		// A chain of generations keeps working.
		if _, n := checkReusing(t, data, got); n != len(self.Instances) {
			t.Errorf("%s: second generation reused %d of %d", paths[i], n, len(self.Instances))
		}
		// From every other fixture, and from nil.
		checkReusing(t, data, nil)
		for _, other := range docs {
			checkReusing(t, data, parse(t, other))
		}
	}
}

func TestParseReusingRandomEdits(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(f)))
			doc := graphtest.Generate(1000, 300, f)
			prev := parse(t, doc)
			if len(prev.Instances) != 1000 {
				t.Fatalf("%d instances", len(prev.Instances))
			}
			for round := range 60 {
				s, err := graphtest.Decode(doc)
				if err != nil {
					t.Fatal(err)
				}
				op := edit(rng, s, round)
				format := f
				if round%17 == 16 {
					format = 1 - f // the other CLI takes over: nothing reusable
				}
				next := graphtest.Encode(s, format)
				got, n := checkReusing(t, next, prev)
				if op.changed >= 0 && format == f {
					// Pure attribute changes: all the others are reused.
					if want := len(got.Instances) - op.changed; n != want {
						t.Errorf("round %d (%s): reused %d instances, want %d", round, op.name, n, want)
					}
				}
				if format == f {
					doc, prev = next, got
				}
			}
		})
	}
}

type editOp struct {
	name    string
	changed int // instances whose attributes alone changed, or -1
}

// edit applies a random edit to s: attribute changes, added and removed
// instances and resources, reordering, serial and output changes.
func edit(rng *rand.Rand, s *graphtest.StateV4, round int) editOp {
	s.Serial++
	var all []*graphtest.InstanceV4
	for ri := range s.Resources {
		for ii := range s.Resources[ri].Instances {
			all = append(all, &s.Resources[ri].Instances[ii])
		}
	}
	bump := func(in *graphtest.InstanceV4) {
		in.Attributes = json.RawMessage(fmt.Sprintf(`{"id":"x%d","round":%d,"v":%q}`, rng.Int(), round, "<&>"))
	}
	switch round % 7 {
	case 0, 1:
		k := 1 + rng.IntN(3)
		for _, i := range rng.Perm(len(all))[:k] {
			bump(all[i])
		}
		return editOp{"change", k}
	case 2:
		r := &s.Resources[rng.IntN(len(s.Resources))]
		r.Instances = append(r.Instances, graphtest.InstanceV4{
			IndexKey:   fmt.Sprintf("added %d \"q\"", round),
			Attributes: json.RawMessage(`{"id":"new"}`),
		})
		s.Resources = append(s.Resources, graphtest.ResourceV4{
			Module: fmt.Sprintf(`module.new["%d"]`, round), Mode: "data", Type: "terraform_remote_state", Name: "x",
			Provider:  `provider["terraform.io/builtin/terraform"]`,
			Instances: []graphtest.InstanceV4{{Attributes: json.RawMessage(`{"outputs":{}}`)}},
		})
		return editOp{"add", -1}
	case 3:
		ri := rng.IntN(len(s.Resources))
		r := &s.Resources[ri]
		r.Instances = slices.Delete(r.Instances, 0, 1)
		if len(r.Instances) == 0 {
			s.Resources = slices.Delete(s.Resources, ri, ri+1)
		}
		s.Resources = slices.Delete(s.Resources, len(s.Resources)-1, len(s.Resources))
		return editOp{"remove", -1}
	case 4:
		i, j := rng.IntN(len(s.Resources)), rng.IntN(len(s.Resources))
		s.Resources[i], s.Resources[j] = s.Resources[j], s.Resources[i]
		slices.Reverse(s.Resources[i].Instances)
		return editOp{"reorder", -1}
	case 5:
		s.Outputs[fmt.Sprintf("o%d", round)] = graphtest.OutputV4{Value: json.RawMessage(`{"a":[1,2]}`), Type: json.RawMessage(`["object",{"a":["tuple",["number","number"]]}]`)}
		delete(s.Outputs, "first")
		o := s.Outputs["instances"]
		o.Value = json.RawMessage(fmt.Sprint(round))
		s.Outputs["instances"] = o
		return editOp{"outputs", 0}
	default:
		// Move an instance to another resource and change a dependency.
		in := all[rng.IntN(len(all))]
		in.Dependencies = append(in.Dependencies, fmt.Sprintf("terraform_data.dep%d", round))
		in.Status = "tainted"
		return editOp{"status+deps", 1}
	}
}

// TestParseReusingDoesNotPinOldDocuments: a reused instance points at the
// new document (and a shared arena), never at prev's document, so a state
// does not keep every document it was derived from alive.
func TestParseReusingDoesNotPinOldDocuments(t *testing.T) {
	doc := graphtest.Generate(50, 200, graph.FormatCompact)
	prev := parse(t, doc)
	next := graphtest.Change(doc, []int{3}, graph.FormatCompact)
	st, err := graph.ParseReusing(next, prev)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(doc))), uintptr(unsafe.Pointer(unsafe.SliceData(doc)))+uintptr(len(doc))
	for i := range st.Instances {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(st.Instances[i].Object)))
		if p >= lo && p < hi {
			t.Fatalf("instance %s points into the previous document", st.Instances[i].ID())
		}
	}
	if !bytes.Equal(st.Render(graph.FormatCompact), next) {
		t.Error("Render differs from the posted document")
	}
}

// TestParseReusingGuesses covers what ParseReusing skips without
// validating: an instance spelled exactly as the one of prev it guesses
// comes next. Bytes that match the guess under another resource header,
// a guess thrown off by a shifted order, and bytes that differ from the
// guess in one place, however small, still parse exactly as Parse does,
// and what Parse refuses ParseReusing refuses with the same error.
func TestParseReusingGuesses(t *testing.T) {
	for _, f := range []graph.Format{graph.FormatIndent, graph.FormatCompact} {
		t.Run(f.String(), func(t *testing.T) {
			doc := graphtest.Generate(200, 100, f)
			prev := parse(t, doc)
			base, err := graphtest.Decode(doc)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name   string
				edit   func(s *graphtest.StateV4)
				reused int // instances taken over from prev; -1 to not check
			}{
				{"unchanged", func(s *graphtest.StateV4) {}, 200},
				{"renamed resource", func(s *graphtest.StateV4) {
					s.Resources[3].Name += "_renamed" // same instance bytes, another header
				}, 200 - len(base.Resources[3].Instances)},
				{"first instance removed", func(s *graphtest.StateV4) {
					s.Resources[0].Instances = s.Resources[0].Instances[1:]
					if len(s.Resources[0].Instances) == 0 {
						s.Resources = s.Resources[1:]
					}
				}, 199},
				{"resources swapped", func(s *graphtest.StateV4) {
					s.Resources[0], s.Resources[len(s.Resources)-1] = s.Resources[len(s.Resources)-1], s.Resources[0]
				}, 200},
				{"one byte of an attribute", func(s *graphtest.StateV4) {
					in := &s.Resources[1].Instances[0]
					a := bytes.Clone(in.Attributes)
					i := bytes.LastIndexByte(a, '"') - 1
					a[i] ^= 1 // same length: the guess's length lands on the same end
					in.Attributes = a
				}, 199},
			} {
				t.Run(c.name, func(t *testing.T) {
					s, err := graphtest.Decode(doc)
					if err != nil {
						t.Fatal(err)
					}
					c.edit(s)
					_, n := checkReusing(t, graphtest.Encode(s, f), prev)
					if c.reused >= 0 && n != c.reused {
						t.Errorf("reused %d instances, want %d", n, c.reused)
					}
				})
			}
			// An instance that no longer parses, at the guess's length and
			// with its first and last bytes in place, is refused as Parse
			// refuses it.
			at := bytes.Index(doc, []byte(`"schema_version"`))
			if at < 0 {
				t.Fatal("no schema_version in the generated document")
			}
			bad := bytes.Clone(doc)
			bad[at] = '{' // `{schema_version": ...`: not JSON
			checkReusing(t, bad, prev)
			if _, err := graph.ParseReusing(bad, prev); err == nil {
				t.Fatal("ParseReusing took a document that is not JSON")
			}
		})
	}
}

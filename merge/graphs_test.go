package merge_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/merge"
)

// TestMergeModel checks Merge against the rule it promises, on
// random triples of states over a few keys: a key that only mine changed
// since base takes mine's value, one that only theirs changed keeps
// theirs', one both changed to one value keeps it, and one both changed to
// different values is a conflict naming exactly those keys.
func TestMergeModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	keys := []string{"a", "b", "c", "d", "e"}
	values := []string{"", "v1", "v2"} // "": absent
	pick := func() modelState {
		s := modelState{}
		for _, k := range keys {
			if v := values[r.IntN(len(values))]; v != "" {
				s[k] = v
			}
		}
		return s
	}
	parse := func(serial uint64, s modelState) *graph.State {
		g, err := graph.Parse(modelDoc(serial, s))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	var merged, conflicted int
	for round := 0; round < 2000; round++ {
		base, theirs, mine := pick(), pick(), pick()
		want := modelState{}
		var conflicts []string
		for _, k := range keys {
			switch {
			case graphtest.Same(mine, base, k):
				graphtest.SetKey(want, theirs, k)
			case graphtest.Same(theirs, base, k), graphtest.Same(theirs, mine, k):
				graphtest.SetKey(want, mine, k)
			default:
				conflicts = append(conflicts, k)
			}
		}
		got, cfs := merge.Merge(parse(3, base), parse(5, theirs), parse(4, mine))
		if len(conflicts) > 0 {
			var addrs []string
			for _, cf := range cfs {
				addrs = append(addrs, strings.TrimPrefix(cf.Key.String(), "terraform_data."))
			}
			if got != nil || len(cfs) == 0 {
				t.Fatalf("round %d: base %v theirs %v mine %v: want a conflict on %v, got %v", round, base, theirs, mine, conflicts, got)
			}
			if diff := cmp.Diff(conflicts, addrs); diff != "" {
				t.Fatalf("round %d: conflicting addresses (-want +got):\n%s", round, diff)
			}
			conflicted++
			continue
		}
		if len(cfs) > 0 {
			t.Fatalf("round %d: base %v theirs %v mine %v: conflicts %v", round, base, theirs, mine, cfs)
		}
		if diff := cmp.Diff(want, stateOf(got)); diff != "" {
			t.Fatalf("round %d: base %v theirs %v mine %v: merged state (-want +got):\n%s", round, base, theirs, mine, diff)
		}
		if got.Serial != 6 {
			t.Fatalf("round %d: serial %d, want theirs' 5 + 1", round, got.Serial)
		}
		merged++
	}
	if merged == 0 || conflicted == 0 {
		t.Fatalf("the rounds exercised no merge (%d) or no conflict (%d)", merged, conflicted)
	}
}

// TestMergeRespelled: a state another JSON writer re-serialized changed
// nothing, so mine's respelling of an instance theirs changed is stale, not
// a conflict; and a nil base is an empty one.
func TestMergeRespelled(t *testing.T) {
	base, err := graph.Parse([]byte(`{"version":4,"serial":1,"lineage":"l","outputs":{"o":{"value":1,"type":"number"}},"resources":[` +
		`{"mode":"managed","type":"terraform_data","name":"x","provider":"p","instances":[{"schema_version":0,"attributes":{"id":"x","a":1,"b":2}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := graph.Parse([]byte(`{"version":4,"serial":2,"lineage":"l","outputs":{"o":{"value":2,"type":"number"}},"resources":[` +
		`{"mode":"managed","type":"terraform_data","name":"x","provider":"p","instances":[{"schema_version":0,"attributes":{"id":"x","a":1,"b":3}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	mine, err := graph.Parse([]byte(`{"version":4,"serial":2,"lineage":"l","outputs":{"o":{"type":"number","value":1.0}},"resources":[` +
		`{"mode":"managed","type":"terraform_data","name":"x","provider":"p","instances":[{"schema_version":0,"attributes":{"b":2,"a":1e0,"id":"x"}}]},` +
		`{"mode":"managed","type":"terraform_data","name":"y","provider":"p","instances":[{"schema_version":0,"attributes":{"id":"y"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, cfs := merge.Merge(base, theirs, mine)
	if len(cfs) > 0 {
		t.Fatal(cfs)
	}
	var ids []string
	for i := range got.Instances {
		ids = append(ids, got.Instances[i].ID())
	}
	if !slices.Equal(ids, []string{"terraform_data.x", "terraform_data.y"}) {
		t.Fatalf("instances %v, want x (theirs) and y (mine)", ids)
	}
	x := got.Instances[got.Index()["terraform_data.x"]]
	if !x.Equal(&theirs.Instances[0]) {
		t.Errorf("x = %s, want theirs' %s", x.Object, theirs.Instances[0].Object)
	}
	if o := got.Outputs[got.OutputIndex()["o"]]; !o.Equal(&theirs.Outputs[0]) {
		t.Errorf("output o = %s, want theirs'", o.Object)
	}

	if _, cfs := merge.Merge(nil, theirs, mine); len(cfs) != 2 || cfs[0].Key.String() != "output.o" || cfs[1].Key.String() != "terraform_data.x" {
		t.Errorf("from an empty base both added output o and x, differently: want conflicts on both, got %v", cfs)
	}
}

// ExampleMerge merges two applies made from one base: each added a
// resource of its own, so both are in the result.
func ExampleMerge() {
	doc := func(serial int, names ...string) *graph.State {
		s := fmt.Sprintf(`{"version":4,"serial":%d,"lineage":"l","outputs":{},"resources":[`, serial)
		for i, n := range names {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf(`{"mode":"managed","type":"terraform_data","name":%q,"provider":"p","instances":[{"schema_version":0,"attributes":{"id":%q}}]}`, n, n)
		}
		g, err := graph.Parse([]byte(s + "]}"))
		if err != nil {
			panic(err)
		}
		return g
	}
	base := doc(1, "shared")
	merged, conflicts := merge.Merge(base, doc(2, "shared", "theirs"), doc(2, "shared", "mine"))
	if len(conflicts) > 0 {
		fmt.Println(conflicts)
		return
	}
	for i := range merged.Instances {
		fmt.Println(merged.Instances[i].ID())
	}
	fmt.Println("serial", merged.Serial)
	// Output:
	// terraform_data.mine
	// terraform_data.shared
	// terraform_data.theirs
	// serial 3
}

type modelState = graphtest.Values

func modelDoc(serial uint64, s modelState) []byte { return graphtest.ValuesDoc(serial, "l", s) }

func stateOf(g *graph.State) modelState { return graphtest.ValuesOf(g) }

package kilolock

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
)

// TestInTerraformOrder: sorting a loaded version's instances in place, with
// their objects' places, gives Terraform's order (as graph.State.Sort
// does) and keeps each place with its instance, whatever order the store
// gave them in.
func TestInTerraformOrder(t *testing.T) {
	g, err := graph.Parse(graphtest.Generate(700, 20, graph.FormatIndent))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		instances := slices.Clone(g.Instances)
		rng.Shuffle(len(instances), func(i, j int) { instances[i], instances[j] = instances[j], instances[i] })
		refs := make([]objectRef, len(instances))
		for i := range refs {
			refs[i] = objectRef{at: int64(i), n: len(instances[i].Object)}
		}
		placeOf := map[string]objectRef{}
		for i := range instances {
			placeOf[instances[i].ID()] = refs[i]
		}
		inTerraformOrder(instances, refs)
		for i := range instances {
			if instances[i].ID() != g.Instances[i].ID() {
				t.Fatalf("position %d holds %s, want %s", i, instances[i].ID(), g.Instances[i].ID())
			}
			if refs[i] != placeOf[instances[i].ID()] {
				t.Fatalf("%s went with place %v, not its own %v", instances[i].ID(), refs[i], placeOf[instances[i].ID()])
			}
		}
	}
}

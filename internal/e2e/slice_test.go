package e2e_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/internal/tofu"
)

// TestSliceAndGraph: after an apply, kl state pull --address writes a
// slice that the real CLI reads as a state (its instances and every
// output), and kl graph shows the same cone through kld and on the
// database.
func TestSliceAndGraph(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, databaseURL string) {
		srv := setup(t, databaseURL)
		wd := tofu.NewWorkdir(t, srv.Backend("example")+smallConfig("v1"))
		wd.Must("init", "-no-color")
		wd.Must("apply", "-auto-approve", "-no-color")

		// named["alpha"] rests on terraform_data.counted, all of it.
		slice := mustKL(t, "--server", srv.URL, "state", "pull", "example", "--address", `terraform_data.named["alpha"]`, "--cone", "dependencies")
		local := tofu.NewWorkdir(t, "")
		local.WriteFile("slice.tfstate", slice)
		got := strings.Fields(local.Must("state", "list", "-state=slice.tfstate"))
		slices.Sort(got)
		want := []string{"terraform_data.counted[0]", "terraform_data.counted[1]", "terraform_data.counted[2]", `terraform_data.named["alpha"]`}
		if !slices.Equal(got, want) {
			t.Errorf("tofu state list of the slice = %q, want %q", got, want)
		}
		var outs map[string]json.RawMessage
		if err := json.Unmarshal([]byte(local.Must("output", "-state=slice.tfstate", "-json")), &outs); err != nil || len(outs) != 2 {
			t.Errorf("tofu output of the slice: %v, %d outputs, want counted and named", err, len(outs))
		}
		full, sliced := parseState(t, getState(t, srv, "example")), parseState(t, []byte(slice))
		if sliced.Lineage != full.Lineage || sliced.Serial != full.Serial {
			t.Errorf("the slice has lineage %s serial %d; the state %s %d", sliced.Lineage, sliced.Serial, full.Lineage, full.Serial)
		}

		var cones []string
		for _, target := range [][]string{{"--server", srv.URL}, {"--database", databaseURL}} {
			out := mustKL(t, append(target, "graph", "example", "--address", "terraform_data.counted", "--format", "json")...)
			var v struct {
				Nodes []struct{ Address string } `json:"nodes"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Nodes) != 6 {
				t.Errorf("kl graph %s: %v, want counted's 3 instances and the 3 named resting on them:\n%s", target[0], err, out)
			}
			cones = append(cones, out)
		}
		if cones[0] != cones[1] {
			t.Errorf("kl graph answers differently through kld and on the database:\n%s\nvs\n%s", cones[0], cones[1])
		}
	})
}

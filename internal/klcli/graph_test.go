package klcli_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/klcli"
)

// TestGraphGolden: kl graph's table and DOT output, the same on every
// backend. prod @3 holds terraform_data.a, .b (which depends on a) and
// .c[0]; @1 held a, b and time_sleep.wait.
func TestGraphGolden(t *testing.T) {
	ctx := context.Background()
	latest := kilolock.Latest
	cases := []goldenCase{
		{"graph_prod_dependents", func(c *klcli.CLI) error {
			return c.Graph(ctx, "prod", latest, []string{"terraform_data.a"}, history.Dependents, 0, "")
		}},
		{"graph_prod_dependencies_depth", func(c *klcli.CLI) error {
			return c.Graph(ctx, "prod", latest, []string{"terraform_data.b", "terraform_data.c"}, history.Dependencies, 1, klcli.GraphTable)
		}},
		{"graph_prod_dot", func(c *klcli.CLI) error {
			return c.Graph(ctx, "prod", latest, []string{"terraform_data.a"}, history.Dependents, 0, klcli.GraphDOT)
		}},
	}
	eachGolden(t, nil, cases)
}

func TestGraphJSONAndRefusals(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		out, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.Graph(ctx, "prod", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}, []string{"time_sleep.wait"}, history.Dependents, 0, klcli.GraphJSON)
		})
		if err != nil {
			t.Fatal(err)
		}
		var v history.ConeView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if v.Version.Number != 1 || len(v.Nodes) != 1 || v.Nodes[0].ID != "time_sleep.wait" || v.Direction != history.Dependents || len(v.Edges) != 0 {
			t.Errorf("the cone of wait at @1 = %s", out)
		}
		for _, tc := range []struct {
			name      string
			state     string
			addresses []string
			exit      int
			says      string
		}{
			{"an address prod no longer holds", "prod", []string{"time_sleep.wait"}, klcli.ExitUsage, "time_sleep.wait"},
			{"an address that does not parse", "prod", []string{"terraform_data"}, klcli.ExitUsage, "terraform_data"},
			{"a state that does not exist", "nope", []string{"terraform_data.a"}, klcli.ExitNotFound, "nope"},
			{"a state with no version", "empty", []string{"terraform_data.a"}, klcli.ExitNotFound, "empty"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := h.run(t, false, func(c *klcli.CLI) error {
					return c.Graph(ctx, tc.state, kilolock.Latest, tc.addresses, history.Dependents, 0, "")
				})
				_, serr := h.run(t, false, func(c *klcli.CLI) error {
					return c.PullSlice(ctx, tc.state, kilolock.Latest, tc.addresses, history.SliceDependencies)
				})
				for _, err := range []error{err, serr} {
					if klcli.ExitCode(err) != tc.exit || !strings.Contains(err.Error(), tc.says) {
						t.Errorf("error %v (exit %d); want exit %d saying %q", err, klcli.ExitCode(err), tc.exit, tc.says)
					}
				}
			})
		}
		if _, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.Graph(ctx, "prod", kilolock.Latest, []string{"terraform_data.a"}, history.Dependents, 0, "svg")
		}); klcli.ExitCode(err) != klcli.ExitUsage {
			t.Errorf("--format svg: %v", err)
		}
	})
}

// TestPullSlice: kl state pull --address writes a state file of the slice,
// the same on every backend.
func TestPullSlice(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		first := kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}
		for _, tc := range []struct {
			name    string
			ref     kilolock.VersionRef
			address string
			cone    history.SliceCone
			want    []string
		}{
			{"b and what it rests on", kilolock.Latest, "terraform_data.b", history.SliceDependencies, []string{"terraform_data.a", "terraform_data.b"}},
			{"what rests on a", kilolock.Latest, "terraform_data.a", history.SliceDependents, []string{"terraform_data.a", "terraform_data.b"}},
			{"c alone", kilolock.Latest, "terraform_data.c", history.SliceNone, []string{"terraform_data.c[0]"}},
			{"wait, at the first version", first, "time_sleep.wait", history.SliceDependents, []string{"time_sleep.wait"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := h.run(t, false, func(c *klcli.CLI) error { return c.PullSlice(ctx, "prod", tc.ref, []string{tc.address}, tc.cone) })
				if err != nil {
					t.Fatal(err)
				}
				s, err := graph.Parse([]byte(out))
				if err != nil {
					t.Fatalf("not a state: %v\n%s", err, out)
				}
				var got []string
				for i := range s.Instances {
					got = append(got, s.Instances[i].Address())
				}
				seed := "prod-3"
				if tc.ref == first {
					seed = "prod-1"
				}
				full, _ := graph.Parse(seedDoc(t, seed))
				if !slices.Equal(got, tc.want) || s.Lineage != full.Lineage || len(s.Outputs) != len(full.Outputs) {
					t.Errorf("slice holds %q, lineage %s, %d outputs; want %q", got, s.Lineage, len(s.Outputs), tc.want)
				}
			})
		}
		if _, err := h.run(t, false, func(c *klcli.CLI) error {
			return c.PullSlice(ctx, "prod", kilolock.Latest, []string{"terraform_data.a"}, "everything")
		}); !errors.Is(err, kilolock.ErrInvalid) || !strings.Contains(err.Error(), "everything") {
			t.Errorf("a bad cone: %v", err)
		}
	})
}

// TestGraphCommands runs kl graph and kl state pull --address as typed,
// over a server and on the database.
func TestGraphCommands(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		global := []string{"--server", h.url}
		if h.url == "" {
			dir := t.TempDir() + "/kl.db"
			seededEngine(t, dir)
			global = []string{"--database", dir}
		}
		kl := func(args ...string) (string, error) { return runKL(t, append(slices.Clone(global), args...)...) }
		out, err := kl("graph", "prod", "--address", "terraform_data.b", "--dependencies", "--format", "dot")
		if err != nil || !strings.Contains(out, `"terraform_data.b" -> "terraform_data.a";`) {
			t.Errorf("kl graph --dependencies --format dot: %v\n%s", err, out)
		}
		out, err = kl("graph", "prod", "--address", "time_sleep.wait", "--version", "@1", "--format", "json")
		if err != nil || !strings.Contains(out, `"number": 1`) || !strings.Contains(out, `"direction": "dependents"`) {
			t.Errorf("kl graph --version @1 --format json: %v\n%s", err, out)
		}
		if _, err := kl("graph", "prod", "--address", "terraform_data.a", "--depth=-1"); klcli.ExitCode(err) != klcli.ExitUsage {
			t.Errorf("kl graph --depth -1: %v", err)
		}
		out, err = kl("state", "pull", "prod", "--address", "terraform_data.b", "--address", "terraform_data.c", "--cone", "none")
		if s, perr := graph.Parse([]byte(out)); err != nil || perr != nil || len(s.Instances) != 2 || s.Serial != 3 {
			t.Errorf("kl state pull --address --cone none: %v %v\n%s", err, perr, out)
		}
		out, err = kl("state", "pull", "prod", "--address", "time_sleep.wait", "--version", "1")
		if s, perr := graph.Parse([]byte(out)); err != nil || perr != nil || len(s.Instances) != 1 || s.Serial != 1 {
			t.Errorf("kl state pull --address --version 1: %v %v\n%s", err, perr, out)
		}
		if _, err := kl("state", "pull", "prod", "--cone", "none"); klcli.ExitCode(err) != klcli.ExitUsage || !strings.Contains(err.Error(), "--address") {
			t.Errorf("kl state pull --cone without --address: %v", err)
		}
	})
}

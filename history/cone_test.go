package history_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/internal/enginetest"
)

// fixture reads graph/testdata/SCENARIO/terraform.tfstate.
func fixture(t testing.TB, scenario string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "graph", "testdata", scenario, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// modulesEngine writes graph/testdata/modules as @1 of state "m" (13
// instances: terraform_data.root, module.a["x"|"y z"] and module.b[0|1],
// each with a this and a child module's leaf[0] and [1]) and @2 without
// module.b[1].
func modulesEngine(t *testing.T) *kilolock.Engine {
	t.Helper()
	e := enginetest.SQLiteEngine(t)
	enginetest.Write(t, e, "m", fixture(t, "modules"))
	// A cone of @1 before @2 is written, so that the index of @1 is cached
	// when @2 replaces it.
	if _, err := history.Cone(context.Background(), e, "m", kilolock.Latest, []string{"terraform_data.root"}, history.Dependents, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := history.StateRm(context.Background(), e, "m", []string{"module.b[1]"}, history.StateOpOptions{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	return e
}

func nodeAddresses(nodes []history.ConeNode) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Address)
	}
	return out
}

func TestEngineCone(t *testing.T) {
	ctx := context.Background()
	e := modulesEngine(t)
	tests := []struct {
		name      string
		ref       string
		addresses []string
		dir       history.Direction
		depth     int
		want      []string
		edges     int
	}{
		{"blast radius of the root, current version", "@latest", []string{"terraform_data.root"}, history.Dependents, 0, []string{
			"terraform_data.root",
			`module.a["x"].module.child.terraform_data.leaf[0]`, `module.a["x"].module.child.terraform_data.leaf[1]`, `module.a["x"].terraform_data.this`,
			`module.a["y z"].module.child.terraform_data.leaf[0]`, `module.a["y z"].module.child.terraform_data.leaf[1]`, `module.a["y z"].terraform_data.this`,
			"module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]", "module.b[0].terraform_data.this",
		}, 14 + 5},
		{"the version before still has module.b[1]", "@1", []string{"module.b[1].terraform_data.this"}, history.Dependents, 1, []string{
			"module.b[1].terraform_data.this",
			"module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]",
			"module.b[1].module.child.terraform_data.leaf[0]", "module.b[1].module.child.terraform_data.leaf[1]",
		}, 4},
		{"what a leaf rests on, spelled loosely", "@2", []string{`module.a["\u0078"].module.child.terraform_data.leaf[0]`}, history.Dependencies, 0, []string{
			`module.a["x"].module.child.terraform_data.leaf[0]`,
			`module.a["x"].terraform_data.this`, `module.a["y z"].terraform_data.this`, "terraform_data.root",
		}, 3 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := history.Cone(ctx, e, "m", enginetest.MustRef(t, tt.ref), tt.addresses, tt.dir, tt.depth)
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeAddresses(c.Nodes); !slices.Equal(got, tt.want) {
				t.Errorf("nodes:\n got %q\nwant %q", got, tt.want)
			}
			if len(c.Edges) != tt.edges {
				t.Errorf("%d edges, want %d: %v", len(c.Edges), tt.edges, c.Edges)
			}
			if c.State != "m" || c.Direction != tt.dir || c.Depth != tt.depth || c.Nodes[0].Depth != 0 {
				t.Errorf("view %+v", c)
			}
			if want := int64(2); tt.ref == "@1" {
				want = 1
				if c.Version.Number != want {
					t.Errorf("version @%d, want @%d", c.Version.Number, want)
				}
			} else if c.Version.Number != want {
				t.Errorf("version @%d, want @%d", c.Version.Number, want)
			}
		})
	}
}

func TestEngineConeRefusals(t *testing.T) {
	ctx := context.Background()
	e := modulesEngine(t)
	enginetest.Write(t, e, "enc", []byte(`{"serial":2,"lineage":"lin","meta":{},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`))
	tests := []struct {
		name      string
		state     string
		ref       string
		addresses []string
		depth     int
		code      string // of an *InvalidError
		is        error
		message   string
	}{
		{"no address", "m", "@latest", nil, 0, "address_missing", nil, ""},
		{"an address that does not parse", "m", "@latest", []string{"module."}, 0, "invalid_address", nil, `"module."`},
		{"addresses the version does not hold", "m", "@latest", []string{"terraform_data.root", "module.b[1].terraform_data.this", "x.y"}, 0, "unknown_address", nil,
			"@2 of state m holds nothing at module.b[1].terraform_data.this, x.y"},
		{"a negative depth", "m", "@latest", []string{"terraform_data.root"}, -1, "invalid_depth", nil, ""},
		{"an unknown state", "nope", "@latest", []string{"terraform_data.root"}, 0, "", kilolock.ErrNotFound, ""},
		{"an unknown version", "m", "@9", []string{"terraform_data.root"}, 0, "", kilolock.ErrNotFound, "@1…@2"},
		{"an encrypted state", "enc", "@latest", []string{"terraform_data.root"}, 0, "", kilolock.ErrEncrypted, "encrypted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := history.Cone(ctx, e, tt.state, enginetest.MustRef(t, tt.ref), tt.addresses, history.Dependents, tt.depth)
			_, serr := history.Slice(ctx, e, tt.state, enginetest.MustRef(t, tt.ref), tt.addresses, history.SliceNone)
			for _, err := range []error{err, serr} {
				if tt.depth < 0 && err == serr {
					continue // slices take no depth
				}
				var ie *kilolock.InvalidError
				switch {
				case tt.code != "" && (!errors.As(err, &ie) || ie.Code != tt.code || ie.Hint == ""):
					t.Errorf("error %v; want an InvalidError %s with a hint", err, tt.code)
				case tt.is != nil && !errors.Is(err, tt.is):
					t.Errorf("error %v; want %v", err, tt.is)
				case err == nil || !strings.Contains(err.Error(), tt.message):
					t.Errorf("error %v; want one saying %q", err, tt.message)
				}
			}
		})
	}
	if _, err := history.Slice(ctx, e, "m", kilolock.Latest, []string{"terraform_data.root"}, "all"); err == nil || !strings.Contains(err.Error(), `"all"`) {
		t.Errorf("a bad cone: %v", err)
	}
}

func TestEngineSlice(t *testing.T) {
	ctx := context.Background()
	e := modulesEngine(t)
	full, err := graph.Parse(fixture(t, "modules"))
	if err != nil {
		t.Fatal(err)
	}
	byID := full.Index()
	tests := []struct {
		name      string
		ref       string
		addresses []string
		cone      history.SliceCone
		want      []string
	}{
		{"a leaf and what it rests on", "@latest", []string{`module.a["y z"].module.child.terraform_data.leaf[1]`}, history.SliceDependencies, []string{
			"terraform_data.root", `module.a["x"].terraform_data.this`,
			`module.a["y z"].module.child.terraform_data.leaf[1]`, `module.a["y z"].terraform_data.this`,
		}},
		{"what rests on b[0]'s this", "@latest", []string{"module.b[0].terraform_data.this"}, history.SliceDependents, []string{
			"module.b[0].terraform_data.this", "module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]",
		}},
		{"at the version before, b[1] rests on it too", "@1", []string{"module.b[0].terraform_data.this"}, history.SliceDependents, []string{
			"module.b[0].terraform_data.this", "module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]",
			"module.b[1].module.child.terraform_data.leaf[0]", "module.b[1].module.child.terraform_data.leaf[1]",
		}},
		{"a resource alone", "@latest", []string{"module.b[0].module.child.terraform_data.leaf", "terraform_data.root"}, history.SliceNone, []string{
			"terraform_data.root", "module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := history.Slice(ctx, e, "m", enginetest.MustRef(t, tt.ref), tt.addresses, tt.cone)
			if err != nil {
				t.Fatal(err)
			}
			s, err := graph.Parse(d.Bytes)
			if err != nil {
				t.Fatalf("the slice is not a state: %v\n%s", err, d.Bytes)
			}
			got := enginetest.Addresses(s)
			if !sameSet(got, tt.want) {
				t.Errorf("slice holds\n %q\nwant\n %q", got, tt.want)
			}
			for i := range s.Instances {
				in := &s.Instances[i]
				if j, ok := byID[in.ID()]; !ok || full.Instances[j].Hash != in.Hash {
					t.Errorf("%s is not as stored", in.ID())
				}
			}
			want := int64(2)
			if tt.ref == "@1" {
				want = 1
			}
			if d.Version.Number != want || s.Lineage != full.Lineage || s.Serial != d.Version.Serial || s.Format != graph.FormatCompact ||
				len(s.Outputs) != 1 || string(s.Outputs[0].Object) != string(full.Outputs[0].Object) {
				t.Errorf("slice of @%d: lineage %s serial %d format %s outputs %d", d.Version.Number, s.Lineage, s.Serial, s.Format, len(s.Outputs))
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestEngineOutputs(t *testing.T) {
	ctx := context.Background()
	st, _ := enginetest.OpenSQLite(t)
	e := kilolock.NewEngine(st, kilolock.Options{})
	for _, scenario := range []string{"checks", "sensitive"} {
		t.Run(scenario, func(t *testing.T) {
			doc := fixture(t, scenario)
			enginetest.Write(t, e, scenario, doc)
			full, err := graph.Parse(doc)
			if err != nil {
				t.Fatal(err)
			}
			// Both the cached version and one loaded from the store.
			for _, eng := range []*kilolock.Engine{e, kilolock.NewEngine(st, kilolock.Options{})} {
				d, err := eng.Outputs(ctx, scenario)
				if err != nil {
					t.Fatal(err)
				}
				s, err := graph.Parse(d.Bytes)
				if err != nil {
					t.Fatalf("not a state: %v\n%s", err, d.Bytes)
				}
				if len(s.Instances) != 0 || s.CheckResults != nil || s.Lineage != full.Lineage || s.Serial != full.Serial ||
					s.TerraformVersion != full.TerraformVersion || !graph.Diff(&graph.State{Outputs: full.Outputs}, s).Empty() {
					t.Errorf("outputs document:\n%s", d.Bytes)
				}
			}
		})
	}
	if d, _ := e.Outputs(ctx, "sensitive"); !strings.Contains(string(d.Bytes), `"value":"hunter2","type":"string","sensitive":true`) {
		t.Errorf("a sensitive output must keep its value, marked: %s", d.Bytes)
	}
	enginetest.Write(t, e, "enc", []byte(`{"serial":2,"lineage":"lin","meta":{},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`))
	if _, err := e.Outputs(ctx, "enc"); !errors.Is(err, kilolock.ErrEncrypted) {
		t.Errorf("outputs of an encrypted state: %v", err)
	}
	if _, err := e.Outputs(ctx, "nope"); !errors.Is(err, kilolock.ErrNotFound) {
		t.Errorf("outputs of no state: %v", err)
	}
}

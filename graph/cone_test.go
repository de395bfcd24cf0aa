package graph

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func loadFixture(t testing.TB, scenario string) *State {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", scenario, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConfigAddress(t *testing.T) {
	r := Resource{Module: `module.a["x]"].module.child[1]`, Mode: "data", Type: "t", Name: "n"}
	if got := r.ConfigAddress(); got != "module.a.module.child.data.t.n" {
		t.Errorf("ConfigAddress = %q", got)
	}
}

func TestCone(t *testing.T) {
	// testdata/modules: terraform_data.root; module.a (for_each x, "y z")
	// and module.b (count 2) each hold terraform_data.this and a child
	// module with terraform_data.leaf[0] and [1]. The CLI records
	// dependencies by config address, so a leaf of module.a["x"] depends
	// on every instance of module.a's this.
	x := NewDepIndex(loadFixture(t, "modules"))
	ids := func(c *Cone) []string {
		var out []string
		for _, n := range c.Nodes {
			out = append(out, n.Address)
		}
		return out
	}
	tests := []struct {
		name  string
		start []string
		dir   Direction
		depth int
		want  []string
	}{
		{"what a leaf rests on", []string{`module.a["x"].module.child.terraform_data.leaf[0]`}, Dependencies, 0, []string{
			`module.a["x"].module.child.terraform_data.leaf[0]`,
			`module.a["x"].terraform_data.this`, `module.a["y z"].terraform_data.this`, "terraform_data.root",
		}},
		{"blast radius of b's this, one edge", []string{"module.b[0].terraform_data.this"}, Dependents, 1, []string{
			"module.b[0].terraform_data.this",
			"module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]",
			"module.b[1].module.child.terraform_data.leaf[0]", "module.b[1].module.child.terraform_data.leaf[1]",
		}},
		{"a resource address starts from all its instances", []string{"module.b[1].module.child.terraform_data.leaf"}, Dependencies, 1, []string{
			"module.b[1].module.child.terraform_data.leaf[0]", "module.b[1].module.child.terraform_data.leaf[1]",
			"module.b[0].terraform_data.this", "module.b[1].terraform_data.this", "terraform_data.root",
		}},
		{"nothing rests on a leaf", []string{"module.b[1].module.child.terraform_data.leaf[1]"}, Dependents, 0, []string{
			"module.b[1].module.child.terraform_data.leaf[1]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := x.Cone(tt.start, tt.dir, tt.depth)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(c); !slices.Equal(got, tt.want) {
				t.Errorf("cone:\n got %q\nwant %q", got, tt.want)
			}
			for _, e := range c.Edges {
				if !slices.Contains(ids(c), e.From) || !slices.Contains(ids(c), e.To) {
					t.Errorf("edge %v leaves the cone", e)
				}
			}
		})
	}
	all, err := x.Cone([]string{"terraform_data.root"}, Dependents, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Nodes) != 13 || all.Nodes[0].Depth != 0 || all.Nodes[12].Depth != 1 {
		t.Errorf("root's dependents: %+v", all.Nodes)
	}
	if _, err := x.Cone([]string{"terraform_data.nope"}, Dependents, 0); err == nil {
		t.Error("an unknown address gave a cone")
	}
}

func TestSliceRoundTrips(t *testing.T) {
	s := loadFixture(t, "modules")
	c, err := NewDepIndex(s).Cone([]string{`module.a["y z"].module.child.terraform_data.leaf[1]`}, Dependencies, 0)
	if err != nil {
		t.Fatal(err)
	}
	slice := s.Slice(c.Indexes)
	back, err := Parse(slice.Render(s.Format))
	if err != nil {
		t.Fatalf("the slice does not parse: %v", err)
	}
	if back.Lineage != s.Lineage || back.Serial != s.Serial || len(back.Outputs) != len(s.Outputs) || len(back.Instances) != 4 {
		t.Errorf("slice: lineage %q serial %d, %d outputs, %d instances", back.Lineage, back.Serial, len(back.Outputs), len(back.Instances))
	}
	for i, in := range back.Instances {
		if in.ID() != slice.Instances[i].ID() || in.Hash != slice.Instances[i].Hash {
			t.Errorf("instance %d: %s does not round-trip", i, in.ID())
		}
	}
}

func TestLookup(t *testing.T) {
	s := loadFixture(t, "modules")
	x := NewDepIndex(s)
	tests := []struct {
		name      string
		addresses []string
		want      []string
		unknown   []string
	}{
		{"an instance", []string{"module.b[0].terraform_data.this"}, []string{"module.b[0].terraform_data.this"}, nil},
		{"a resource is all its instances", []string{`module.a["x"].module.child.terraform_data.leaf`},
			[]string{`module.a["x"].module.child.terraform_data.leaf[0]`, `module.a["x"].module.child.terraform_data.leaf[1]`}, nil},
		{"each once", []string{"terraform_data.root", "terraform_data.root"}, []string{"terraform_data.root"}, nil},
		{"unknown ones are named", []string{"terraform_data.nope", "terraform_data.root", "module.c.terraform_data.this"},
			[]string{"terraform_data.root"}, []string{"terraform_data.nope", "module.c.terraform_data.this"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx, unknown := x.Lookup(tt.addresses)
			var got []string
			for _, i := range idx {
				got = append(got, s.Instances[i].Address())
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(unknown, tt.unknown) {
				t.Errorf("Lookup = %q, unknown %q; want %q, unknown %q", got, unknown, tt.want, tt.unknown)
			}
		})
	}
	if x.Bytes() < int64(len(s.Instances))*4*mapEntryBytes {
		t.Errorf("Bytes = %d for %d instances: it must count the index's entries", x.Bytes(), len(s.Instances))
	}
}

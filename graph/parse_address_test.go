package graph

import "testing"

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in      string
		module  string
		mode    string
		typ     string
		name    string
		key     string // Key.String()
		hasKey  bool
		wantErr bool
	}{
		{in: "aws_instance.web", mode: "managed", typ: "aws_instance", name: "web"},
		{in: "aws_instance.web[0]", mode: "managed", typ: "aws_instance", name: "web", key: "[0]", hasKey: true},
		{in: `module.a["x"].module.b.data.t.n[3]`, module: `module.a["x"].module.b`, mode: "data", typ: "t", name: "n", key: "[3]", hasKey: true},
		{in: `null_resource.k["a\"b\\c"]`, mode: "managed", typ: "null_resource", name: "k", key: `["a\"b\\c"]`, hasKey: true},
		{in: `x.y["$${lit}"]`, mode: "managed", typ: "x", name: "y", key: `["$${lit}"]`, hasKey: true},
		{in: "module.a", wantErr: true},
		{in: "aws_instance", wantErr: true},
		{in: "aws_instance.web[", wantErr: true},
		{in: "aws_instance.web[-1]", wantErr: true},
		{in: "aws_instance.web.extra", wantErr: true},
		{in: "module..x.y", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, err := ParseAddress(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseAddress(%q) = %+v, want an error", tt.in, a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := a.Resource
			if r.Module != tt.module || r.Mode != tt.mode || r.Type != tt.typ || r.Name != tt.name || a.HasKey != tt.hasKey || a.Key.String() != tt.key {
				t.Errorf("ParseAddress(%q) = %+v", tt.in, a)
			}
			if a.String() != tt.in {
				t.Errorf("String() = %q, want the input back", a.String())
			}
		})
	}
}

func TestParseModulePath(t *testing.T) {
	steps, err := ParseModulePath(`module.a["x"].module.b[2].module.c`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.String())
	}
	if len(got) != 3 || got[0] != `module.a["x"]` || got[1] != "module.b[2]" || got[2] != "module.c" {
		t.Errorf("steps = %q", got)
	}
	for _, bad := range []string{"module.", "module.a.", "aws_instance.web", "module.a.b"} {
		if _, err := ParseModulePath(bad); err == nil {
			t.Errorf("ParseModulePath(%q): no error", bad)
		}
	}
}

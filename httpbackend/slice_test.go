package httpbackend

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/history"
)

// seedModules writes graph/testdata/modules (OpenTofu's layout, 13
// instances in nested modules) as state "m", and an encrypted state "enc".
func seedModules(t *testing.T) (*testEnv, []byte) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "graph", "testdata", "modules", "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, "", Options{})
	env.post("m", "", doc)
	env.post("enc", "", []byte(`{"serial":2,"lineage":"lin","meta":{},"encrypted_data":"c2VjcmV0","encryption_version":"v0"}`))
	return env, doc
}

func TestSliceRoute(t *testing.T) {
	env, doc := seedModules(t)
	leaf := `module.a["y z"].module.child.terraform_data.leaf[1]`
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{"dependencies by default", "address=" + url.QueryEscape(leaf), []string{
			leaf, `module.a["x"].terraform_data.this`, `module.a["y z"].terraform_data.this`, "terraform_data.root"}},
		{"dependents", "cone=dependents&address=module.b%5B0%5D.terraform_data.this", []string{
			"module.b[0].terraform_data.this", "module.b[0].module.child.terraform_data.leaf[0]", "module.b[0].module.child.terraform_data.leaf[1]",
			"module.b[1].module.child.terraform_data.leaf[0]", "module.b[1].module.child.terraform_data.leaf[1]"}},
		{"two addresses alone, at a version", "cone=none&ref=%401&address=terraform_data.root&address=module.b%5B1%5D.terraform_data.this", []string{
			"terraform_data.root", "module.b[1].terraform_data.this"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := env.do("GET", "/v1/api/states/m/slice?"+tt.query, nil)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Kilolock-Serial") != "1" {
				t.Fatalf("GET slice: %d %v %s", w.Code, w.Header(), w.Body)
			}
			s, err := graph.Parse(w.Body.Bytes())
			if err != nil {
				t.Fatalf("the slice is no state: %v", err)
			}
			var got []string
			for i := range s.Instances {
				got = append(got, s.Instances[i].Address())
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) || s.Lineage != "d241b40e-cac3-4161-39d7-1b04526e858a" || s.Serial != 1 || len(s.Outputs) != 1 || s.Format != graph.FormatCompact {
				t.Errorf("slice holds %q (lineage %s serial %d, %d outputs, %s); want %q", got, s.Lineage, s.Serial, len(s.Outputs), s.Format, tt.want)
			}
		})
	}
	// The full state is as posted, and nothing was written.
	if w := env.do("GET", "/v1/states/m", nil); w.Body.String() != string(doc) || w.Header().Get("X-Kilolock-Version") != "1" {
		t.Errorf("GET after slices: version %s", w.Header().Get("X-Kilolock-Version"))
	}
}

func TestGraphRoute(t *testing.T) {
	env, _ := seedModules(t)
	w := env.do("GET", "/v1/api/states/m/graph?direction=dependencies&address="+url.QueryEscape(`module.a["x"].module.child.terraform_data.leaf`)+"&depth=1", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("GET graph: %d %s", w.Code, w.Body)
	}
	v := answerOf[history.ConeView](t, w.Body.Bytes())
	var nodes []string
	for _, n := range v.Nodes {
		nodes = append(nodes, n.Address)
	}
	want := []string{`module.a["x"].module.child.terraform_data.leaf[0]`, `module.a["x"].module.child.terraform_data.leaf[1]`,
		`module.a["x"].terraform_data.this`, `module.a["y z"].terraform_data.this`, "terraform_data.root"}
	if !slices.Equal(nodes, want) || len(v.Edges) != 6 || v.Direction != history.Dependencies || v.Depth != 1 || v.Version.Number != 1 {
		t.Errorf("cone %+v; want nodes %q and 6 edges", v, want)
	}
	if !strings.Contains(w.Body.String(), `"direction":"dependencies"`) {
		t.Errorf("the direction is not named: %s", w.Body)
	}
	// Dependents is the default: the blast radius.
	w = env.do("GET", "/v1/api/states/m/graph?address=terraform_data.root", nil)
	if v := answerOf[history.ConeView](t, w.Body.Bytes()); w.Code != http.StatusOK || len(v.Nodes) != 13 || v.Direction != history.Dependents {
		t.Errorf("GET graph of the root: %d %s", w.Code, w.Body)
	}
}

func TestOutputsRoute(t *testing.T) {
	env, doc := seedModules(t)
	w := env.do("GET", "/v1/states/m/outputs", nil)
	if w.Code != http.StatusOK || w.Header().Get("X-Kilolock-Version") != "1" {
		t.Fatalf("GET outputs: %d %s", w.Code, w.Body)
	}
	s, err := graph.Parse(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	full, _ := graph.Parse(doc)
	if len(s.Instances) != 0 || s.Lineage != full.Lineage || s.Serial != full.Serial || len(s.Outputs) != 1 || string(s.Outputs[0].Object) != string(full.Outputs[0].Object) {
		t.Errorf("outputs document: %s", w.Body)
	}
}

// TestSliceRefusals: every bad request gets its own 4xx with a hint, and
// no version is written.
func TestSliceRefusals(t *testing.T) {
	env, _ := seedModules(t)
	for _, tt := range []struct {
		method, target string
		status         int
		code, says     string
	}{
		{"GET", "/v1/api/states/m/slice", 400, "parameter_missing", "address"},
		{"GET", "/v1/api/states/m/slice?address=terraform_data.root&cone=all", 400, "invalid_cone", `"all"`},
		{"GET", "/v1/api/states/m/slice?address=terraform_data.nope&address=terraform_data.root", 400, "unknown_address", "terraform_data.nope"},
		{"GET", "/v1/api/states/m/slice?address=module.", 400, "invalid_address", "module."},
		{"GET", "/v1/api/states/m/slice?address=terraform_data.root&ref=@first", 400, "invalid_version_ref", "first"},
		{"GET", "/v1/api/states/m/slice?address=terraform_data.root&ref=first", 404, "version_not_found", "kl tag list m"},
		{"GET", "/v1/api/states/m/slice?address=terraform_data.root&ref=%407", 404, "version_not_found", "@1…@1"},
		{"GET", "/v1/api/states/enc/slice?address=terraform_data.root", 422, "state_encrypted", "encrypted"},
		{"GET", "/v1/api/states/nope/slice?address=terraform_data.root", 404, "not_found", "nope"},
		{"GET", "/v1/api/states/m/graph?address=terraform_data.root&direction=up", 400, "invalid_direction", `"up"`},
		{"GET", "/v1/api/states/m/graph?address=terraform_data.root&depth=-1", 400, "invalid_parameter", "depth"},
		{"GET", "/v1/api/states/m/graph", 400, "parameter_missing", "address"},
		{"GET", "/v1/api/states/enc/graph?address=terraform_data.root", 422, "state_encrypted", "encrypted"},
		{"GET", "/v1/states/enc/outputs", 422, "state_encrypted", "encrypted"},
		{"GET", "/v1/states/none/outputs", 404, "state_not_found", "no version"},
		{"LOCK", "/v1/states/m/outputs", 405, "method_not_allowed", "not allowed"},
		{"POST", "/v1/states/m/outputs", 405, "method_not_allowed", "not allowed"},
	} {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			w := env.do(tt.method, tt.target, nil)
			if w.Code != tt.status {
				t.Fatalf("%d %s; want %d", w.Code, w.Body, tt.status)
			}
			if b := errorOf(t, w); b.Error != tt.code || !strings.Contains(b.Message, tt.says) {
				t.Errorf("body %+v; want %s saying %q", b, tt.code, tt.says)
			}
		})
	}
	for _, name := range []string{"m", "enc"} {
		if vs, err := env.engine.History(t.Context(), name, kilolock.HistoryOptions{}); err != nil || len(vs) != 1 {
			t.Errorf("history of %s: %d versions, %v", name, len(vs), err)
		}
	}
}

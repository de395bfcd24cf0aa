package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/httpbackend"
)

// layeredDoc is a state of len(layers) layers of terraform_data
// resources, layers[d] in layer d; each resource rests on its share of the
// next layer's, so the cone of the one root holds every resource.
func layeredDoc(layers []int) []byte {
	type inst struct {
		SchemaVersion       int             `json:"schema_version"`
		Attributes          json.RawMessage `json:"attributes"`
		SensitiveAttributes []any           `json:"sensitive_attributes"`
		Dependencies        []string        `json:"dependencies,omitempty"`
	}
	type res struct {
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Provider  string `json:"provider"`
		Instances []inst `json:"instances"`
	}
	types := []string{"terraform_data", "aws_lb", "aws_instance", "aws_subnet", "aws_vpc"}
	var rs []res
	for d, n := range layers {
		for i := range n {
			var deps []string
			if d+1 < len(layers) {
				next := layers[d+1]
				for j := i * next / n; j < (i+1)*next/n; j++ {
					deps = append(deps, fmt.Sprintf("%s.l%d_%03d", types[(d+1)%len(types)], d+1, j))
				}
			}
			attrs, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("l%d-%d", d, i), "layer": d})
			rs = append(rs, res{Mode: "managed", Type: types[d%len(types)], Name: fmt.Sprintf("l%d_%03d", d, i), Provider: `provider["terraform.io/builtin/terraform"]`,
				Instances: []inst{{Attributes: attrs, SensitiveAttributes: []any{}, Dependencies: deps}}})
		}
	}
	doc, _ := json.Marshal(map[string]any{"version": 4, "terraform_version": "1.10.10", "serial": 1, "lineage": "layered", "outputs": map[string]any{}, "resources": rs, "check_results": nil})
	return doc
}

// TestBrowserGraph200 draws a cone of 199 instances: every node is drawn
// once, no two boxes overlap, and every box stays inside the drawing.
func TestBrowserGraph200(t *testing.T) {
	e := kilolock.NewEngine(stores[0].open(t), kilolock.Options{})
	if _, err := e.Write(context.Background(), "layers", layeredDoc([]int{1, 8, 40, 150}), kilolock.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	srv := server(t, e, httpbackend.Options{})
	b := newBrowser(t)
	d := b.open(srv.URL + "/ui/states/layers/graph?address=terraform_data.l0_000")
	logTiming(t, "graph page, 199 nodes", d)
	if n := len(b.attrs("#cone a.node", "data-address")); n != 199 {
		t.Fatalf("drew %d nodes, want 199", n)
	}
	if n := len(b.attrs("#cone path.edge", "data-from")); n != 198 {
		t.Errorf("drew %d edges, want 198", n)
	}
	overlaps := get(b, "overlaps", chromedp.Evaluate[int](`(() => {
		const svg = document.getElementById("cone").getBoundingClientRect();
		const rs = Array.from(document.querySelectorAll("#cone a.node rect")).map(r => r.getBoundingClientRect());
		let bad = 0;
		rs.forEach((a, i) => {
			if (a.left < svg.left || a.right > svg.right || a.top < svg.top || a.bottom > svg.bottom) bad++;
			rs.slice(i + 1).forEach(b => { if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) bad++; });
		});
		return bad;
	})()`))
	if overlaps != 0 {
		t.Errorf("%d boxes overlap or leave the drawing", overlaps)
	}
	b.screenshot("graph-200", false)
	b.open(srv.URL + "/ui/states/layers/graph?address=terraform_data.l0_000&depth=2")
	b.screenshot("graph", true)
}

// TestBrowserLargeStateTimings loads every page of a 10,000-instance state
// in Chromium and logs a TIMING line for each (navigation to ready, the
// server's rendering included), on each store.
func TestBrowserLargeStateTimings(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 10,000-instance state")
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			doc := graphtest.Generate(10_000, 300, graph.FormatCompact)
			for _, d := range [][]byte{doc, graphtest.Change(doc, []int{17, 4242}, graph.FormatCompact)} {
				if _, err := e.Write(ctx, "big", d, kilolock.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			srv := server(t, e, httpbackend.Options{})
			b := newBrowser(t)
			pages := []struct{ name, path, want string }{
				{"states", "/ui/", "#states"},
				{"history", "/ui/states/big", "#timeline"},
				{"diff", "/ui/states/big/diff?from=@1&to=@2", "#changed"},
				{"diff-nothing", "/ui/states/big/diff?from=@1&to=@1", "p.empty"},
				{"search-type", "/ui/states/big/search?type=terraform_data", "#results"},
				{"search-text-every-instance", "/ui/states/big/search?text=string", "#results"},
				{"search-address", "/ui/states/big/search?address=" + url.QueryEscape(`module.svc["api"].module.db`), "#results"},
				{"instance", "/ui/states/big/instance?address=" + url.QueryEscape("terraform_data.r00007[0]"), "#changes"},
				{"graph", "/ui/states/big/graph?address=terraform_data.r00000&direction=dependents", "#cone"},
				{"live", "/ui/live", "#holders, #no-holders"},
			}
			for _, p := range pages {
				b.open(srv.URL + p.path) // warm: the first read parses the version into the cache
				d := b.open(srv.URL + p.path)
				logTiming(t, fmt.Sprintf("%s 10000-instance %s page", st.name, p.name), d)
				if !get(b, "find "+p.want, chromedp.Evaluate[bool](fmt.Sprintf("!!document.querySelector(%q)", p.want))) {
					t.Errorf("%s page lacks %s", p.name, p.want)
				}
			}
		})
	}
}

package webui_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/graph"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/httpbackend"
)

// BenchmarkPages renders each page of a 10,000-instance state on the
// server (no browser), on SQLite: the cost a page adds to kld.
func BenchmarkPages(b *testing.B) {
	e := kilolock.NewEngine(stores[0].open(b), kilolock.Options{})
	doc := graphtest.Generate(10_000, 300, graph.FormatCompact)
	for _, d := range [][]byte{doc, graphtest.Change(doc, []int{17, 4242}, graph.FormatCompact)} {
		if _, err := e.Write(context.Background(), "big", d, kilolock.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	h := httpbackend.New(e, httpbackend.Options{})
	for _, p := range []struct{ name, path string }{
		{"states", "/ui/"},
		{"history", "/ui/states/big"},
		{"diff", "/ui/states/big/diff?from=@1&to=@2"},
		{"search-type", "/ui/states/big/search?type=terraform_data"},
		{"search-text", "/ui/states/big/search?text=string"},
		{"instance", "/ui/states/big/instance?address=" + url.QueryEscape("terraform_data.r00007[0]")},
		{"graph", "/ui/states/big/graph?address=terraform_data.r00000&direction=dependents"},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				r := httptest.NewRequest("GET", p.path, nil)
				r.Header.Set("Accept", "text/html")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s = %d", p.path, w.Code)
				}
			}
		})
	}
}

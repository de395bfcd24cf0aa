package webui_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
)

// linksDoc is a state whose addresses need escaping in a URL: an index
// key in brackets and a module's string key in quotes, n resting on web.
func linksDoc(serial int, ami string) []byte {
	return fmt.Appendf(nil, `{"version":4,"terraform_version":"1.10.10","serial":%d,"lineage":"links-lineage","outputs":{},"resources":[
{"mode":"managed","type":"aws_instance","name":"web","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"index_key":0,"schema_version":0,"attributes":{"id":"i-web","ami":%q},"sensitive_attributes":[]}]},
{"module":"module.a[\"x\"]","mode":"managed","type":"t","name":"n","provider":"provider[\"registry.opentofu.org/hashicorp/aws\"]","instances":[
 {"schema_version":0,"attributes":{"id":"n-1","ami":%q},"sensitive_attributes":[],"dependencies":["aws_instance.web"]}]}],
"check_results":null}
`, serial, ami, ami)
}

// TestBrowserInstanceLinks: every page that links to an instance links to
// a page that opens, for web[0] and module.a["x"].t.n, whose addresses
// need escaping: once, not twice (a twice-escaped address was a 404).
// Headless Chromium, each store.
func TestBrowserInstanceLinks(t *testing.T) {
	web, n := "aws_instance.web[0]", `module.a["x"].t.n`
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			for i, ami := range []string{"ami-old", "ami-new"} {
				if _, err := e.Write(ctx, "links", linksDoc(i+1, ami), kilolock.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// "copy" records the same objects: both are duplicates.
			if _, err := e.Write(ctx, "copy", linksDoc(1, "ami-new"), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			srv := server(t, e, httpbackend.Options{})
			b := newBrowser(t)

			pages := []string{
				"/ui/states/links",
				"/ui/states/links/search?text=ami",
				"/ui/states/links/diff?from=@1&to=@2",
				"/ui/states/links/graph?address=" + url.QueryEscape(n),
				"/ui/search?text=ami-new",
				"/ui/duplicates",
			}
			for _, page := range pages {
				b.open(srv.URL + page)
				var hrefs []string
				for _, h := range b.attrs("a", "href") {
					if strings.Contains(h, "/instance?address=") {
						hrefs = append(hrefs, h)
					}
				}
				var opened []string
				for _, h := range hrefs {
					b.open(srv.URL + h) // a 404 is a console error: the test fails
					opened = append(opened, b.text("main h1"))
					if attrs := b.text("#attributes"); !strings.Contains(attrs, "ami-") {
						t.Errorf("%s: the link %s opens a page without the instance's attributes: %q", page, h, attrs)
					}
				}
				slices.Sort(opened)
				opened = slices.Compact(opened)
				if want := []string{web, n}; !slices.Equal(opened, want) {
					t.Errorf("%s: its instance links %v open %v, want %v", page, hrefs, opened, want)
				}
			}

			// The instance page links to its cone both ways.
			for _, address := range []string{web, n} {
				b.open(srv.URL + "/ui/states/links/instance?address=" + url.QueryEscape(address))
				var cones []string
				for _, h := range b.attrs("main a", "href") {
					if strings.Contains(h, "/graph?address=") {
						cones = append(cones, h)
					}
				}
				if len(cones) != 2 {
					t.Fatalf("the page of %s links to cones %v, want 2", address, cones)
				}
				for _, h := range cones {
					b.open(srv.URL + h)
					if got := b.attrs("#cone a.node.start", "data-address"); !slices.Equal(got, []string{address}) {
						t.Errorf("the cone link %s starts at %v, want %s", h, got, address)
					}
				}
			}
		})
	}
}

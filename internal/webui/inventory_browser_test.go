package webui_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
)

// TestBrowserInventory: /ui/search finds instances across states by type,
// attribute and text, never by a sensitive value, each hit linking to its
// instance page; /ui/duplicates lists the objects both states record; a
// bad filter is a 400 page. Headless Chromium, each store.
func TestBrowserInventory(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			seedNet(t, e)
			// "edge" copied net's web servers and subnet (the same ids),
			// with a DNS record of its own.
			if _, err := e.Write(context.Background(), "edge", netDoc(1, "ami-red", "hunter2-edge", "www-edge", "10.0.2.0/24"), kilolock.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			srv := server(t, e, httpbackend.Options{})
			b := newBrowser(t)
			readme := st.name == "sqlite"

			b.open(srv.URL + "/ui/search?type=aws_instance")
			if got := b.attrs("#results tbody tr", "data-state"); !slices.Equal(got, []string{"net", "net", "edge", "edge"}) {
				t.Errorf("search by type: states %v", got)
			}
			if got := b.attrs("#results tbody tr", "data-address"); !slices.Equal(got, []string{"aws_instance.web[0]", "aws_instance.web[1]", "aws_instance.web[0]", "aws_instance.web[1]"}) {
				t.Errorf("search by type: addresses %v", got)
			}
			b.open(srv.URL + "/ui/search?attr=ami%3Dami-red&text=I-1")
			if got := b.attrs("#results tbody tr", "data-state"); !slices.Equal(got, []string{"edge"}) {
				t.Errorf("search by attribute and text: %v", got)
			}
			if row := b.text("#results tbody tr"); !strings.Contains(row, "@1") || !strings.Contains(row, "ami, id") {
				t.Errorf("the hit = %q, want its version and the matched paths", row)
			}
			b.screenshot("search-across", readme)
			hrefs := b.attrs("#results tbody tr td:nth-child(3) a", "href")
			if len(hrefs) != 1 || !strings.Contains(hrefs[0], "/ui/states/edge/instance?address=") {
				t.Fatalf("the hit links to %v", hrefs)
			}
			b.open(srv.URL + hrefs[0])
			if attrs := b.text("#attributes"); !strings.Contains(attrs, "ami-red") {
				t.Errorf("the instance page of the hit: %q", attrs)
			}
			for _, secret := range []string{secretAfter, "hunter2-edge", "swordfish"} {
				b.open(srv.URL + "/ui/search?text=" + secret)
				if got := b.attrs("#results tbody tr", "data-address"); len(got) != 0 || !strings.HasPrefix(b.text("#total"), "0 hits") {
					t.Errorf("a search for a sensitive value %s found %v", secret, got)
				}
			}

			b.open(srv.URL + "/ui/duplicates")
			if got := b.attrs("#duplicates tbody tr", "data-value"); !slices.Equal(got, []string{"i-0", "i-1", "subnet-1"}) {
				t.Errorf("duplicates = %v, want i-0 i-1 subnet-1", got)
			}
			if got := b.attrs(`#duplicates tr[data-value="subnet-1"] li`, "data-state"); !slices.Equal(got, []string{"edge", "net"}) {
				t.Errorf("subnet-1 recorded by %v", got)
			}
			b.screenshot("duplicates", readme)

			// The state page holds the current version's contents as a tree
			// by module and type, each instance linking to its page.
			b.open(srv.URL + "/ui/states/net")
			if got := b.attrs("#contents details.module", "data-module"); !slices.Equal(got, []string{"", "module.net"}) {
				t.Errorf("modules of net = %v", got)
			}
			if got := b.attrs(`#contents details.module[data-module=""] details.type`, "data-type"); !slices.Equal(got, []string{"aws_instance", "aws_route53_record"}) {
				t.Errorf("types of net's root module = %v", got)
			}
			if got := b.attrs(`#contents details.type[data-type="aws_instance"] a`, "href"); len(got) != 2 || !strings.Contains(got[1], "/ui/states/net/instance?address=") {
				t.Errorf("instances of aws_instance link to %v", got)
			}
			b.screenshot("state-contents", false)

			bad := srv.URL + "/ui/search?address=output.x"
			b.expectStatus(bad, 400)
			b.open(bad)
			if body := b.text("main"); !strings.Contains(body, "names an output") {
				t.Errorf("a bad filter's page: %q", body)
			}
		})
	}
}

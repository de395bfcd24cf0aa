package webui_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
)

// TestBrowserPages loads every page of the known state "net" in headless
// Chromium, on each store: no page logs a console error, and each shows
// what the history holds.
func TestBrowserPages(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			seedNet(t, e)
			srv := server(t, e, httpbackend.Options{})
			b := newBrowser(t)
			readme := st.name == "sqlite"

			b.open(srv.URL + "/ui/")
			if got := b.attrs("#states tbody tr", "data-state"); !slices.Equal(got, []string{"net"}) {
				t.Errorf("states page rows = %v, want [net]", got)
			}
			if row := b.text(`#states tr[data-state="net"]`); !strings.Contains(row, "@5") || !strings.Contains(row, "optimistic") || !strings.Contains(row, "gina@laptop") {
				t.Errorf("states row = %q, want @5, optimistic and the holder gina@laptop", row)
			}
			b.screenshot("states", false)

			b.open(srv.URL + "/ui/states/net")
			if got := b.attrs("#timeline li.version", "data-version"); !slices.Equal(got, []string{"5", "4", "3", "2", "1"}) {
				t.Errorf("timeline versions = %v, want 5 4 3 2 1", got)
			}
			if got := b.attrs("#timeline li.merged", "data-version"); !slices.Equal(got, []string{"4"}) {
				t.Errorf("merges on the timeline = %v, want [4]", got)
			}
			if rej := b.text("#timeline li.rejected"); !strings.Contains(rej, "erin@ci") || !strings.Contains(rej, "aws_route53_record.www") || !strings.Contains(rej, "frank@ci") {
				t.Errorf("rejected commit = %q, want erin's conflict on aws_route53_record.www, lost to frank", rej)
			}
			b.screenshot("history", readme)

			b.open(srv.URL + "/ui/states/net/diff?from=@1&to=@2")
			if got := b.attrs("#changed section", "data-address"); !slices.Equal(got, []string{"aws_instance.web[0]", "aws_instance.web[1]"}) {
				t.Errorf("changed instances = %v", got)
			}
			changed := b.text("#changed")
			for _, want := range []string{"attributes.ami", `"ami-green"`, `"ami-purple"`, "attributes.password", `"(sensitive)"`} {
				if !strings.Contains(changed, want) {
					t.Errorf("diff lacks %s:\n%s", want, changed)
				}
			}
			b.screenshot("diff", false)
			noSecret(t, b)

			b.open(srv.URL + "/ui/states/net/search?type=aws_instance")
			if got := b.attrs("#results tbody tr", "data-address"); !slices.Equal(got, []string{"aws_instance.web[0]", "aws_instance.web[1]"}) {
				t.Errorf("search by type = %v", got)
			}
			b.open(srv.URL + "/ui/states/net/search?text=" + secretAfter)
			if got := b.attrs("#results tbody tr", "data-address"); len(got) != 0 || !strings.HasPrefix(b.text("#total"), "0 matches") {
				t.Errorf("a search for a sensitive value found %v (%s)", got, b.text("#total"))
			}
			b.open(srv.URL + "/ui/states/net/search?address=module.net&text=10.0.9")
			if got := b.attrs("#results tbody tr", "data-address"); !slices.Equal(got, []string{"module.net.aws_subnet.public"}) {
				t.Errorf("search by address and text = %v", got)
			}
			b.screenshot("search", false)

			b.open(srv.URL + "/ui/states/net/instance?address=aws_route53_record.www")
			if got := b.attrs("#changes li", "data-version"); !slices.Equal(got, []string{"5", "3", "1"}) {
				t.Errorf("instance history = %v, want 5 3 1", got)
			}
			if attrs := b.text("#attributes"); !strings.Contains(attrs, "www-6") {
				t.Errorf("instance attributes = %q, want www-6", attrs)
			}
			b.screenshot("instance", false)
			b.open(srv.URL + "/ui/states/net/instance?address=aws_instance.web[0]")
			noSecret(t, b)

			b.open(srv.URL + "/ui/states/net/graph?address=aws_route53_record.www")
			nodes := b.attrs("#cone a.node", "data-address")
			if want := []string{"aws_route53_record.www", "module.net.aws_subnet.public", "aws_instance.web[0]", "aws_instance.web[1]"}; !slices.Equal(nodes, want) {
				t.Errorf("graph nodes = %v, want %v", nodes, want)
			}
			if edges := b.attrs("#cone path.edge", "data-to"); len(edges) != 3 {
				t.Errorf("graph edges to %v, want 3", edges)
			}
			b.screenshot("graph", false)

			b.open(srv.URL + "/ui/live")
			if got := b.attrs("#holders tbody tr", "data-lock"); !slices.Equal(got, []string{"l7"}) {
				t.Errorf("locks in flight = %v, want [l7]", got)
			}
			// It refreshes itself: the script swaps in a fresh <main>.
			b.do("wait for a refresh", chromedp.WaitReady(chromedp.CSS(`body[data-refreshed]`)))
			b.checkConsole("/ui/live after a refresh")
			b.screenshot("live", false)
			b.open(srv.URL + "/ui/")
			b.checkConsole("the last pages")
		})
	}
}

// noSecret fails the test if the page's HTML holds either sensitive value.
func noSecret(t *testing.T, b *browser) {
	t.Helper()
	html := get(b, "page HTML", chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if strings.Contains(html, "swordfish") {
		t.Errorf("the page shows a sensitive value")
	}
}

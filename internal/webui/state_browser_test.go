package webui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/drift"
	"github.com/kilolock/kilolock/history"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/reserve"
)

// secretOutput is a sensitive output's value: no page may show it.
const secretOutput = "hunter-output-7"

// TestBrowserStatePage: a state's page shows what the state holds and what
// is happening to it: its contents as a tree that opens, its outputs (a
// sensitive one masked), the lock held and the apply run in flight, the
// open drift, its tags and its recent activity. Headless Chromium, each
// store; the screenshot is the README's.
func TestBrowserStatePage(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			s := st.open(t)
			e := kilolock.NewEngine(s, kilolock.Options{})
			seedNet(t, e)
			// gina, who holds l7 (optimistic), writes @6 with two outputs.
			outs := `"outputs":{"url":{"value":"https://www.example.com","type":"string"},"db_password":{"value":"` + secretOutput + `","type":"string","sensitive":true}}`
			doc := bytes.Replace(netDoc(6, "ami-purple", secretAfter, "www-6", "10.0.9.0/24"), []byte(`"outputs":{}`), []byte(outs), 1)
			if _, err := e.Write(ctx, "net", doc, kilolock.WriteOptions{LockID: "l7"}); err != nil {
				t.Fatal(err)
			}
			if _, err := history.SetTag(ctx, e, "net", "pre-migration", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}, history.TagOptions{}); err != nil {
				t.Fatal(err)
			}
			report := &drift.DriftReport{Lineage: "net-lineage", Serial: 6, Drifted: []drift.DriftedInstance{{
				Address: "aws_instance.web[1]",
				Real:    json.RawMessage(`{"id":"i-1","ami":"ami-drifted","password":"plain"}`),
			}}}
			if _, err := drift.RecordDrift(ctx, e, "net", report, kilolock.Caller{Actor: "ivan@ci"}); err != nil {
				t.Fatal(err)
			}
			var runID string
			if _, ok := s.(kilolock.RunStore); ok {
				run, err := applyrun.StartRun(ctx, e, "net", kilolock.RunRequest{Actor: "hana@ci", SourceSerial: 6,
					Reservations: []kilolock.Reservation{{Pattern: reserve.MustParse("module.net.*"), Mode: reserve.Write}}})
				if err != nil {
					t.Fatal(err)
				}
				runID = run.ID
			}
			srv := server(t, e, httpbackend.Options{})
			b := newBrowser(t)

			b.open(srv.URL + "/ui/states/net")
			// Contents: a tree one opens, module then type, to the instance.
			sub := `#contents details.module[data-module="module.net"]`
			if got := b.attrs(sub+"[open]", "data-module"); len(got) != 0 {
				t.Errorf("module.net starts open")
			}
			b.do("open module.net", chromedp.Click(sub+" > summary"), chromedp.Click(sub+` details.type[data-type="aws_subnet"] > summary`))
			if got := b.attrs(sub+`[open] details.type[data-type="aws_subnet"][open] a`, "href"); len(got) != 1 || !strings.Contains(got[0], "/instance?address=module.net.aws_subnet.public") {
				t.Errorf("the opened tree links to %v", got)
			}
			if got := b.attrs("#outputs tbody tr", "data-output"); !slices.Equal(got, []string{"db_password", "url"}) {
				t.Errorf("outputs = %v, want db_password url", got)
			}
			if row := b.text(`#outputs tr[data-output="db_password"]`); !strings.Contains(row, "(sensitive)") {
				t.Errorf("the sensitive output shows %q, want it masked", row)
			}
			if row := b.text(`#outputs tr[data-output="url"]`); !strings.Contains(row, `"https://www.example.com"`) {
				t.Errorf("the output url shows %q", row)
			}
			if got := b.attrs("#in-flight #holders tbody tr", "data-lock"); !slices.Equal(got, []string{"l7"}) {
				t.Errorf("locks held = %v, want [l7]", got)
			}
			if runID != "" {
				if got := b.attrs("#in-flight #runs tbody tr", "data-run"); !slices.Equal(got, []string{runID}) {
					t.Errorf("runs in flight = %v, want [%s]", got, runID)
				}
			}
			if got := b.attrs("#drift tbody tr", "data-address"); !slices.Equal(got, []string{"aws_instance.web[1]"}) {
				t.Errorf("drift = %v, want aws_instance.web[1]", got)
			}
			if row := b.text("#drift tbody tr"); !strings.Contains(row, "ami") || !strings.Contains(row, "ivan@ci") {
				t.Errorf("the drift row = %q, want the path ami and who checked", row)
			}
			if got := b.attrs("#tags li", "data-tag"); !slices.Equal(got, []string{"pre-migration"}) || !strings.Contains(b.text("#tags li"), "@1") {
				t.Errorf("tags = %v (%q), want pre-migration @1", got, b.text("#tags"))
			}
			if got := b.attrs("#activity li", "data-activity"); !slices.Equal(got, []string{"@6", "rejected", "@5", "@4", "@3"}) {
				t.Errorf("recent activity = %v, want @6, erin's rejected commit, @5 @4 @3", got)
			}
			b.screenshot("state", st.name == "sqlite")
			noSecret(t, b)
			if html := get(b, "page HTML", chromedp.Evaluate[string]("document.documentElement.outerHTML")); strings.Contains(html, secretOutput) {
				t.Errorf("the state page shows the sensitive output's value")
			}

			// A later page of the timeline is the timeline only.
			b.open(srv.URL + "/ui/states/net?before=3")
			if got := b.attrs("#outputs, #activity, #contents", "id"); len(got) != 0 {
				t.Errorf("an older page of the timeline shows %v", got)
			}
		})
	}
}

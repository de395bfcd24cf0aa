package webui_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/applyrun"
	"github.com/kilolock/kilolock/graph/graphtest"
	"github.com/kilolock/kilolock/history"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
	"github.com/kilolock/kilolock/httpbackend/prommetrics"
	"github.com/kilolock/kilolock/reserve"
)

// TestLiveRunsAndMetrics: an apply run in flight shows on the live page
// with its reservations, and in /metrics. The stores keep apply runs once
// issue 12 lands (kilolock.RunStore); until then the page says so and the
// test skips.
func TestLiveRunsAndMetrics(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			e := kilolock.NewEngine(s, kilolock.Options{})
			seedNet(t, e)
			srv := server(t, e, httpbackend.Options{Metrics: prommetrics.New(nil)})
			page := get200(t, srv.URL+"/ui/live")
			if _, ok := s.(kilolock.RunStore); !ok {
				if !strings.Contains(page, "This store keeps no apply runs yet.") {
					t.Errorf("the live page does not say that the store keeps no runs")
				}
				t.Skip("this store keeps no apply runs yet (kilolock.RunStore, issue 12)")
			}
			run, err := applyrun.StartRun(context.Background(), e, "net", kilolock.RunRequest{Actor: "hana@ci", SourceSerial: 5,
				Reservations: []kilolock.Reservation{{Pattern: reserve.MustParse("module.net.*"), Mode: reserve.Write}}})
			if err != nil {
				t.Fatal(err)
			}
			page = get200(t, srv.URL+"/ui/live")
			if !strings.Contains(page, `data-run="`+run.ID+`"`) || !strings.Contains(page, "module.net.*") {
				t.Errorf("the live page lacks run %s and its reservation", run.ID)
			}
			if m := get200(t, srv.URL+"/metrics"); !strings.Contains(m, `kl_apply_runs{status="waiting"} 1`) {
				t.Errorf("/metrics lacks the waiting run")
			}
		})
	}
}

// get200 GETs url as a browser would, failing the test unless it is 200.
func get200(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestLiveLocks: the live page shows a plan's read lock as shared and an
// apply's under the state's lock mode, each lock's whole ID to copy, and
// the force-unlock command beside it.
func TestLiveLocks(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			e := kilolock.NewEngine(s, kilolock.Options{})
			seedNet(t, e)
			ctx := context.Background()
			const planID, applyID = "0f5e3a6c-1d2b-4c8e-9a7f-aa11bb22cc33", "7c3a91d2-e4f5-a6b7-c8d9-0123456789ab"
			if _, err := e.Lock(ctx, "net", kilolock.LockInfo{ID: planID, Operation: kilolock.OperationPlan, Who: "plan@ci"}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Lock(ctx, "net", kilolock.LockInfo{ID: applyID, Operation: "OperationTypeApply", Who: "alice@laptop"}); err != nil {
				t.Fatal(err)
			}
			srv := server(t, e, httpbackend.Options{Metrics: prommetrics.New(nil)})
			page := get200(t, srv.URL+"/ui/live")
			row := func(id string) string {
				i := strings.Index(page, `<tr data-lock="`+id+`">`)
				if i < 0 {
					t.Fatalf("the live page lacks the lock %s", id)
				}
				r, _, _ := strings.Cut(page[i:], "</tr>")
				return r
			}
			for id, want := range map[string][]string{
				planID:  {`<code class="lock-id" title="the whole lock id, to copy">` + planID + `</code>`, "tofu force-unlock -force " + planID, `<td class="lock-kind">shared (plan)</td>`},
				applyID: {"tofu force-unlock -force " + applyID, `<td class="lock-kind">optimistic</td>`}, // seedNet's state is optimistic
			} {
				for _, w := range want {
					if r := row(id); !strings.Contains(r, w) {
						t.Errorf("the live page's row of lock %s lacks %s:\n%s", id, w, r)
					}
				}
			}
		})
	}
}

// TestHistoryTagOnVersion: a tag is drawn on its version's entry of the
// timeline, not as an entry (a dot) of its own.
func TestHistoryTagOnVersion(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			seedNet(t, e)
			if _, err := history.SetTag(context.Background(), e, "net", "pre-migration", kilolock.VersionRef{Kind: kilolock.RefNumber, N: 1}, history.TagOptions{}); err != nil {
				t.Fatal(err)
			}
			page := get200(t, server(t, e, httpbackend.Options{}).URL+"/ui/states/net")
			i := strings.Index(page, `data-version="1"`)
			if i < 0 {
				t.Fatalf("the timeline lacks @1")
			}
			entry, _, _ := strings.Cut(page[i:], "</li>")
			if !strings.Contains(entry, `<span class="pill tag"`) || !strings.Contains(entry, ">pre-migration</span>") {
				t.Errorf("@1's entry does not show its tag:\n%s", entry)
			}
			if strings.Contains(page, `class="tags"`) {
				t.Errorf("the tag still has an entry of its own")
			}
		})
	}
}

// TestHistoryNamesTheOtherSideOfAMove: each side's timeline says how many
// instances went where (or came from where), linking the other state at
// the version the move made there.
func TestHistoryNamesTheOtherSideOfAMove(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			e := kilolock.NewEngine(st.open(t), kilolock.Options{})
			for name, v := range map[string]graphtest.Values{"a": {"x": "1", "y": "2"}, "b": {"z": "3"}} {
				if _, err := e.Write(ctx, name, graphtest.ValuesDoc(1, "lin-"+name, v), kilolock.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := history.Move(ctx, e, "a", "b", []history.MovePair{{From: "terraform_data.x"}}, history.MoveOptions{Actor: "alice"}); err != nil {
				t.Fatal(err)
			}
			srv := server(t, e, httpbackend.Options{Metrics: prommetrics.New(nil)}).URL
			for name, want := range map[string]string{
				"a": `moved 1 instance(s) to <a class="move-other" href="/ui/states/b">b</a> @2`,
				"b": `moved 1 instance(s) from <a class="move-other" href="/ui/states/a">a</a> @2`,
			} {
				page := get200(t, srv+"/ui/states/"+name)
				i := strings.Index(page, `data-version="2"`)
				if i < 0 {
					t.Fatalf("%s's timeline lacks @2", name)
				}
				entry, _, _ := strings.Cut(page[i:], "</li>")
				if !strings.Contains(entry, want) {
					t.Errorf("%s @2 does not name the other side (%s):\n%s", name, want, entry)
				}
			}
		})
	}
}

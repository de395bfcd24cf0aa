package webui_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/httpbackend"
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
			srv := server(t, e, httpbackend.Options{})
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

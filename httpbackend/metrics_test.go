package httpbackend

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kilolock/kilolock/httpbackend/prommetrics"
	"github.com/kilolock/kilolock/tenancy"
)

// TestMetricsSeries: /metrics is the Prometheus client's, with the Go
// runtime and process collectors, and every series the handler had
// before keeps its name and type.
func TestMetricsSeries(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.post("demo", "", stateDoc(t, "lin", 1, map[string]string{"web": "v1"}))
	env.h.metrics.ObserveAnswer(403, "quota_exceeded") // the quota lane's codes
	env.h.metrics.ObserveAnswer(403, "grant_missing")  // not a quota's
	custom := prometheus.NewCounter(prometheus.CounterOpts{Name: "kl_drift_checks_total", Help: "Drift checks run."})
	env.h.metrics.(*prommetrics.Metrics).Registerer().MustRegister(custom)
	custom.Add(3)
	w := env.do("GET", "/metrics", nil)
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	body := w.Body.String()
	types := map[string]string{
		"kl_http_requests_total": "counter", "kl_http_request_duration_seconds": "histogram",
		"kl_lock_waits_total": "counter", "kl_locks_refused_total": "counter", "kl_commits_total": "counter",
		"kl_auth_denials_unaudited_total": "counter", "kl_commit_rows_total": "counter", "kl_commit_bytes_total": "counter",
		"kl_request_body_bytes": "gauge", "kl_request_body_memory_bytes": "gauge", "kl_request_bodies_reading": "gauge",
		"kl_quota_denials_total": "counter", "kl_drift_checks_total": "counter",
		"go_goroutines": "gauge", "go_memstats_heap_alloc_bytes": "gauge", "process_resident_memory_bytes": "gauge", "process_cpu_seconds_total": "counter",
	}
	for name, typ := range types {
		if !strings.Contains(body, "# TYPE "+name+" "+typ+"\n") {
			t.Errorf("/metrics lacks %s of type %s", name, typ)
		}
	}
	for _, want := range []string{`kl_commits_total{source="push"} 1`, `kl_quota_denials_total{code="quota_exceeded"} 1`, "kl_drift_checks_total 3"} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "grant_missing") {
		t.Errorf("/metrics counts a non-quota denial as a quota's")
	}
}

// TestMetricsOwnRegistry: a Handler given a registry registers its series
// there, beside the embedding service's own.
func TestMetricsOwnRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	theirs := prometheus.NewCounter(prometheus.CounterOpts{Name: "service_requests_total", Help: "The service's."})
	reg.MustRegister(theirs)
	env := newEnv(t, "", Options{Metrics: prommetrics.New(reg)})
	env.post("demo", "", stateDoc(t, "lin", 1, map[string]string{"web": "v1"}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	if !names["service_requests_total"] || !names["kl_commits_total"] || names["go_goroutines"] {
		t.Errorf("registry holds %v: want the service's and kl_ series, no collectors added behind its back", names)
	}
}

// TestMetricsByState: under --auth=token, /metrics names no tenant's
// state to a scrape without credentials (kl_drifted_instances is summed,
// beside kl_drifted_states), the operator's token reads the series by
// state, and other credentials get 401.
func TestMetricsByState(t *testing.T) { eachAuthEnv(t, testMetricsByState) }

func testMetricsByState(t *testing.T, env *testEnv, ts tenancy.TenantStore) {
	tenants, _ := seedCrossTenant(t, env, ts)
	var names []string
	for ti, f := range tenants[:2] {
		name, err := tenancy.TenantStateName(f.ws.ID, f.envs[0].PublicID, "main")
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		body := fmt.Sprintf(`{"lineage":"lin-%d-0","serial":1,"drifted":[{"address":"terraform_data.web","real":null}]}`, ti)
		if w := env.do("POST", "/v1/api/states/"+name+"/drift", []byte(body), bearer(operatorSecret)...); w.Code != http.StatusOK {
			t.Fatalf("POST drift of %s = %d %s", name, w.Code, w.Body)
		}
	}

	anonymous := env.do("GET", "/metrics", nil)
	if anonymous.Code != http.StatusOK {
		t.Fatalf("anonymous /metrics = %d %s", anonymous.Code, anonymous.Body)
	}
	body := anonymous.Body.String()
	for _, f := range tenants {
		for _, e := range f.envs {
			if strings.Contains(body, f.ws.ID) || strings.Contains(body, e.PublicID) {
				t.Fatalf("anonymous /metrics names a tenant's workspace or environment:\n%s", grepLines(body, "ws_"))
			}
		}
	}
	for _, want := range []string{"kl_drifted_instances 2\n", "kl_drifted_states 2\n", "# TYPE kl_drifted_instances gauge\n", "kl_http_requests_total{"} {
		if !strings.Contains(body, want) {
			t.Errorf("anonymous /metrics lacks %q:\n%s", want, grepLines(body, "kl_drifted"))
		}
	}

	operator := env.do("GET", "/metrics", nil, bearer(operatorSecret)...)
	if operator.Code != http.StatusOK {
		t.Fatalf("the operator's /metrics = %d %s", operator.Code, operator.Body)
	}
	for _, name := range names {
		if want := `kl_drifted_instances{state="` + name + `"} 1`; !strings.Contains(operator.Body.String(), want+"\n") {
			t.Errorf("the operator's /metrics lacks %s:\n%s", want, grepLines(operator.Body.String(), "kl_drifted"))
		}
	}

	for _, cred := range [][]string{bearer(tenants[0].auto[0]), bearer(tenants[0].pat), bearer("klo_wrong"), basic(tenants[0].ws.ID, tenants[0].autoRead[0])} {
		w := env.do("GET", "/metrics", nil, cred...)
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "operator token") || strings.Contains(w.Body.String(), "kl_drifted") {
			t.Errorf("/metrics with %s = %d %s", cred[1][:12], w.Code, w.Body)
		}
	}
}

// grepLines are the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestMetricsUnserved: a Handler given no Metrics (kl's in-process one)
// answers /metrics 404 with what to scrape instead, and counts nothing
// while serving the rest.
func TestMetricsUnserved(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.h = New(env.engine, Options{Logger: env.h.log})
	env.post("demo", "", stateDoc(t, "lin", 1, map[string]string{"web": "v1"}))
	w := env.do("GET", "/metrics", nil)
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `"metrics_unserved"`) || !strings.Contains(w.Body.String(), "prommetrics.New") {
		t.Errorf("GET /metrics without Metrics: %d %s", w.Code, w.Body)
	}
}

package httpbackend

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsSeries: /metrics is the Prometheus client's, with the Go
// runtime and process collectors, and every series the handler had
// before keeps its name and type.
func TestMetricsSeries(t *testing.T) {
	env := newEnv(t, "", Options{})
	env.post("demo", "", stateDoc(t, "lin", 1, map[string]string{"web": "v1"}))
	env.h.metrics.observeAnswer(403, "quota_exceeded") // the quota lane's codes
	env.h.metrics.observeAnswer(403, "grant_missing")  // not a quota's
	custom := prometheus.NewCounter(prometheus.CounterOpts{Name: "kl_drift_checks_total", Help: "Drift checks run."})
	env.h.Registerer().MustRegister(custom)
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
	env := newEnv(t, "", Options{Registry: reg})
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

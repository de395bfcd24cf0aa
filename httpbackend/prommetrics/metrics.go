// Package prommetrics is kld's metrics: the series of an
// httpbackend.Handler on a Prometheus registry, served at /metrics with the
// Go runtime's and the process's. A Handler given none (kl's in-process
// one) counts nothing, and does not link the Prometheus client.
package prommetrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kilolock/kilolock/applyrun"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kilolock/kilolock"
	"github.com/kilolock/kilolock/inventory"
)

// durationBuckets are the upper bounds, in seconds, of the request duration
// histogram: from a cached GET to a large POST on a slow database.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics are the server's series on a Prometheus registry: set
// httpbackend.Options.Metrics to one. Every label takes its values from a
// small fixed set (route patterns, known methods, the root package's reason
// codes), so cardinality stays bounded whatever clients send. One Metrics
// serves one Handler.
type Metrics struct {
	reg *prometheus.Registry

	requests     *prometheus.CounterVec
	durations    *prometheus.HistogramVec
	commits      *prometheus.CounterVec // by kilolock.Source
	refusals     *prometheus.CounterVec // by conflict reason
	denials      *prometheus.CounterVec // by the lane's denial code
	bodyRefusals *prometheus.CounterVec // by code: body_memory_full, body_memory_share, body_timeout, body_too_large
	quotaDenials *prometheus.CounterVec // by code

	denialsUnaudited prometheus.Counter
	lockWaits        prometheus.Counter
	locksRefused     prometheus.Counter
	commitRows       prometheus.Counter
	commitBytes      prometheus.Counter
}

// New registers the server's series on reg: an embedding service's own
// registry, or nil for one of its own with the Go runtime and process
// collectors.
func New(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	counter := func(name, help string) prometheus.Counter {
		return f(prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})).(prometheus.Counter)
	}
	byLabel := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)).(*prometheus.CounterVec)
	}
	return &Metrics{
		reg:      reg,
		requests: byLabel("kl_http_requests_total", "HTTP requests by route pattern, method and status.", "route", "method", "status"),
		durations: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kl_http_request_duration_seconds",
			Help: "HTTP request durations by route pattern.", Buckets: durationBuckets}, []string{"route"})).(*prometheus.HistogramVec),
		lockWaits:        counter("kl_lock_waits_total", "Locks taken after being refused at least once (clients waiting with -lock-timeout)."),
		locksRefused:     counter("kl_locks_refused_total", "LOCK requests answered 423 because another holder had the state."),
		commits:          byLabel("kl_commits_total", "Versions committed through this server, by source (merge: a write merged onto others committed since its base serial).", "source"),
		refusals:         byLabel("kl_commits_refused_total", "Writes and settings refused with 409 by reason (conflict: an optimistic write overlapping another).", "reason"),
		denials:          byLabel("kl_auth_denials_total", "Requests the authenticated lane refused, by reason (kl audit --denied lists them).", "reason"),
		denialsUnaudited: counter("kl_auth_denials_unaudited_total", "Denials over the audit budget (per remote host for anonymous ones, per credential for the others): logged, not kept in the audit log."),
		bodyRefusals:     byLabel("kl_request_bodies_refused_total", "Request bodies refused while being received, by code (body_memory_full: 503, body_memory_share: 429, body_timeout: 408, body_too_large: 413).", "code"),
		quotaDenials:     byLabel("kl_quota_denials_total", "Writes and plans refused by a quota (403), by code.", "code"),
		commitRows:       counter("kl_commit_rows_total", "Database rows written by commits."),
		commitBytes:      counter("kl_commit_bytes_total", "Bytes of values written by commits."),
	}
}

// knownMethods keeps the method label's cardinality bounded whatever
// clients send.
var knownMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "LOCK": true, "UNLOCK": true, "OPTIONS": true, "PATCH": true}

// ObserveRequest counts a request answered.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if !knownMethods[method] {
		method = "OTHER"
	}
	m.requests.WithLabelValues(route, method, statusText(status)).Inc()
	m.durations.WithLabelValues(route).Observe(d.Seconds())
}

// statusText is the status label: the three digits.
func statusText(status int) string {
	if status < 100 || status > 999 {
		return "other"
	}
	return string([]byte{byte('0' + status/100), byte('0' + status/10%10), byte('0' + status%10)})
}

// ObserveCommit counts a version committed and what it wrote.
func (m *Metrics) ObserveCommit(source kilolock.Source, stats kilolock.WriteStats) {
	m.commits.WithLabelValues(string(source)).Inc()
	m.commitRows.Add(float64(stats.Rows))
	m.commitBytes.Add(float64(stats.Bytes))
}

// ObserveRefusal counts a write or setting refused with a 409 conflict; the
// reasons are the root package's few constants, so the label stays bounded.
func (m *Metrics) ObserveRefusal(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// ObserveDenial counts a request the authenticated lane refused; the codes
// are the lane's own few, so the label stays bounded.
func (m *Metrics) ObserveDenial(reason string, audited bool) {
	m.denials.WithLabelValues(reason).Inc()
	if !audited {
		m.denialsUnaudited.Inc()
	}
}

// ObserveBodyRefusal counts a request body refused while it was read.
func (m *Metrics) ObserveBodyRefusal(code string) { m.bodyRefusals.WithLabelValues(code).Inc() }

// ObserveAnswer counts what an error answer says beyond its route: a
// refusal by a quota (a 403 whose code starts with "quota_", the codes of
// the quota lane) by its code.
func (m *Metrics) ObserveAnswer(status int, code string) {
	if status == http.StatusForbidden && strings.HasPrefix(code, "quota_") {
		m.quotaDenials.WithLabelValues(code).Inc()
	}
}

// ObserveLockRefused counts a LOCK answered 423: another holder had the
// state.
func (m *Metrics) ObserveLockRefused() { m.locksRefused.Inc() }

// ObserveLockWaited counts a lock taken after being refused at least once.
func (m *Metrics) ObserveLockWaited() { m.lockWaits.Inc() }

// Attach adds the series read at scrape time from the handler's state —
// its request bodies (held bytes, budget, bodies being read), the engine's
// cache of current versions, the apply runs and reservations, drift and
// duplicates — and returns the handlers of /metrics: byState serves every
// series, summed the series by state summed into one (scope.go). The
// Handler calls it once, from httpbackend.New; log logs what a scrape
// could not read.
func (m *Metrics) Attach(engine *kilolock.Engine, bodies func() (held, limit, reading int64), log func(msg any, kv ...any)) (byState, summed http.Handler) {
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("kl_request_body_bytes", "Bytes of request bodies held now, of the budget kld --body-memory sets.", func() float64 { held, _, _ := bodies(); return float64(held) })
	gauge("kl_request_body_memory_bytes", "The budget of request body bytes held at once (kld --body-memory).", func() float64 { _, limit, _ := bodies(); return float64(limit) })
	gauge("kl_request_bodies_reading", "Request bodies being received now.", func() float64 { _, _, n := bodies(); return float64(n) })
	m.reg.MustRegister(&cacheCollector{engine: engine})
	m.reg.MustRegister(&runCollector{engine: engine, log: log})
	m.reg.MustRegister(&driftCollector{engine: engine, log: log})
	if is, ok := engine.Store().(inventory.Store); ok {
		m.reg.MustRegister(&duplicateCollector{store: is, log: log})
	}
	serve := func(g prometheus.Gatherer) http.Handler {
		return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: promLogger(log), ErrorHandling: promhttp.ContinueOnError})
	}
	return serve(m.reg), serve(anonymousGatherer{m.reg})
}

// runScrapeLimit bounds the in-flight runs one scrape counts.
const runScrapeLimit = 10_000

// runCollector reports the engine's apply runs in flight and their
// reservations, read from the store at each scrape (so every replica
// reports the same, database-wide). A store that keeps no runs reports
// nothing.
type runCollector struct {
	engine *kilolock.Engine
	log    func(msg any, kv ...any)
}

var (
	runsDesc         = prometheus.NewDesc("kl_apply_runs", "Orchestrated apply runs in flight, by status (waiting, active), across the database.", []string{"status"}, nil)
	reservationsDesc = prometheus.NewDesc("kl_reservations", "Reservations of the apply runs in flight, by whether they are held or waited for.", []string{"state"}, nil)
)

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) { ch <- runsDesc; ch <- reservationsDesc }

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	runs, err := applyrun.Runs(ctx, c.engine, kilolock.RunFilter{InFlight: true, Limit: runScrapeLimit})
	var ie *kilolock.InvalidError
	if errors.As(err, &ie) && ie.Code == "runs_unsupported" {
		return
	}
	if err != nil {
		c.log("metrics: read apply runs", "err", err)
		return
	}
	var waiting, active, held, wanted float64
	for _, r := range runs {
		switch r.Status {
		case kilolock.RunWaiting:
			waiting++
			wanted += float64(len(r.Reservations))
		case kilolock.RunActive:
			active++
			held += float64(len(r.Reservations))
		}
	}
	ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, waiting, "waiting")
	ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, active, "active")
	ch <- prometheus.MustNewConstMetric(reservationsDesc, prometheus.GaugeValue, held, "held")
	ch <- prometheus.MustNewConstMetric(reservationsDesc, prometheus.GaugeValue, wanted, "waiting")
}

// Registerer is where other parts of a server add their series to what
// /metrics serves (drift checks, for one).
func (m *Metrics) Registerer() prometheus.Registerer { return m.reg }

// promLogger is promhttp's logger, on the handler's.
type promLogger func(msg any, kv ...any)

func (l promLogger) Println(v ...any) { l("metrics: " + fmt.Sprint(v...)) }

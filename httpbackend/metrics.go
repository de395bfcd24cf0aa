package httpbackend

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kilolock/kilolock"
)

// durationBuckets are the upper bounds, in seconds, of the request duration
// histogram: from a cached GET to a large POST on a slow database.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// metrics are the server's counters, written in the Prometheus text format
// by hand: a handful of series do not need a client library.
type metrics struct {
	mu        sync.Mutex
	requests  map[requestKey]uint64
	durations map[string]*histogram // by route
	commits   map[string]uint64     // by kilolock.Source
	refusals  map[string]uint64     // by conflict reason
	denials   map[string]uint64     // by the lane's denial code

	bodyRefusals map[string]uint64 // by code: body_memory_full, body_timeout, body_too_large

	denialsUnaudited atomic.Uint64
	lockWaits        atomic.Uint64
	locksRefused     atomic.Uint64
	commitRows       atomic.Uint64
	commitBytes      atomic.Uint64
}

type requestKey struct {
	route, method string
	status        int
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; one more for +Inf
	sum    float64
	count  uint64
}

func newMetrics() *metrics {
	return &metrics{
		requests:  map[requestKey]uint64{},
		durations: map[string]*histogram{},
		commits:   map[string]uint64{},
		refusals:  map[string]uint64{},
		denials:   map[string]uint64{},

		bodyRefusals: map[string]uint64{},
	}
}

// knownMethods keeps the method label's cardinality bounded whatever
// clients send.
var knownMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "LOCK": true, "UNLOCK": true, "OPTIONS": true, "PATCH": true}

func (m *metrics) observeRequest(route, method string, status int, d time.Duration) {
	if !knownMethods[method] {
		method = "OTHER"
	}
	secs := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[requestKey{route, method, status}]++
	hg := m.durations[route]
	if hg == nil {
		hg = &histogram{counts: make([]uint64, len(durationBuckets)+1)}
		m.durations[route] = hg
	}
	i, _ := slices.BinarySearch(durationBuckets, secs)
	hg.counts[i]++
	hg.sum += secs
	hg.count++
}

func (m *metrics) observeCommit(source kilolock.Source, stats kilolock.WriteStats) {
	m.mu.Lock()
	m.commits[string(source)]++
	m.mu.Unlock()
	m.commitRows.Add(uint64(stats.Rows))
	m.commitBytes.Add(uint64(stats.Bytes))
}

// observeRefusal counts a write or setting refused with a 409 conflict; the
// reasons are the root package's few constants, so the label stays bounded.
func (m *metrics) observeRefusal(reason string) {
	m.mu.Lock()
	m.refusals[reason]++
	m.mu.Unlock()
}

// observeDenial counts a request the authenticated lane refused; the codes
// are the lane's own few, so the label stays bounded.
func (m *metrics) observeDenial(reason string, audited bool) {
	m.mu.Lock()
	m.denials[reason]++
	m.mu.Unlock()
	if !audited {
		m.denialsUnaudited.Add(1)
	}
}

// observeBodyRefusal counts a request body refused while it was read.
func (m *metrics) observeBodyRefusal(code string) {
	m.mu.Lock()
	m.bodyRefusals[code]++
	m.mu.Unlock()
}

// serveMetrics answers GET /metrics in the Prometheus text format 0.0.4.
func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	var b bytes.Buffer
	h.metrics.write(&b)
	header(&b, "kl_request_body_bytes", "gauge", "Bytes of request bodies held now, of the budget kld --body-memory sets.")
	fmt.Fprintf(&b, "kl_request_body_bytes %d\n", h.bodies.held.Load())
	header(&b, "kl_request_body_memory_bytes", "gauge", "The budget of request body bytes held at once (kld --body-memory).")
	fmt.Fprintf(&b, "kl_request_body_memory_bytes %d\n", h.bodies.limit)
	header(&b, "kl_request_bodies_reading", "gauge", "Request bodies being received now.")
	fmt.Fprintf(&b, "kl_request_bodies_reading %d\n", h.bodies.count.Load())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
	return nil
}

func (m *metrics) write(b *bytes.Buffer) {
	m.mu.Lock()
	defer m.mu.Unlock()

	header(b, "kl_http_requests_total", "counter", "HTTP requests by route pattern, method and status.")
	keys := make([]requestKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b requestKey) int {
		return cmpAll(strings.Compare(a.route, b.route), strings.Compare(a.method, b.method), a.status-b.status)
	})
	for _, k := range keys {
		fmt.Fprintf(b, "kl_http_requests_total{route=%s,method=%s,status=\"%d\"} %d\n", quote(k.route), quote(k.method), k.status, m.requests[k])
	}

	header(b, "kl_http_request_duration_seconds", "histogram", "HTTP request durations by route pattern.")
	routes := make([]string, 0, len(m.durations))
	for r := range m.durations {
		routes = append(routes, r)
	}
	slices.Sort(routes)
	for _, route := range routes {
		hg := m.durations[route]
		var cum uint64
		for i, le := range durationBuckets {
			cum += hg.counts[i]
			fmt.Fprintf(b, "kl_http_request_duration_seconds_bucket{route=%s,le=\"%s\"} %d\n", quote(route), strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		fmt.Fprintf(b, "kl_http_request_duration_seconds_bucket{route=%s,le=\"+Inf\"} %d\n", quote(route), hg.count)
		fmt.Fprintf(b, "kl_http_request_duration_seconds_sum{route=%s} %s\n", quote(route), strconv.FormatFloat(hg.sum, 'g', -1, 64))
		fmt.Fprintf(b, "kl_http_request_duration_seconds_count{route=%s} %d\n", quote(route), hg.count)
	}

	header(b, "kl_lock_waits_total", "counter", "Locks taken after being refused at least once (clients waiting with -lock-timeout).")
	fmt.Fprintf(b, "kl_lock_waits_total %d\n", m.lockWaits.Load())
	header(b, "kl_locks_refused_total", "counter", "LOCK requests answered 423 because another holder had the state.")
	fmt.Fprintf(b, "kl_locks_refused_total %d\n", m.locksRefused.Load())

	header(b, "kl_commits_total", "counter", "Versions committed through this server, by source.")
	byLabel(b, "kl_commits_total", "source", m.commits)
	header(b, "kl_commits_refused_total", "counter", "Writes and settings refused with 409 by reason (conflict: an optimistic write overlapping another).")
	byLabel(b, "kl_commits_refused_total", "reason", m.refusals)
	header(b, "kl_auth_denials_total", "counter", "Requests the authenticated lane refused, by reason (kl audit --denied lists them).")
	byLabel(b, "kl_auth_denials_total", "reason", m.denials)
	header(b, "kl_auth_denials_unaudited_total", "counter", "Denials over the audit budget (per remote host for anonymous ones, per credential for the others): logged, not kept in the audit log.")
	fmt.Fprintf(b, "kl_auth_denials_unaudited_total %d\n", m.denialsUnaudited.Load())
	header(b, "kl_request_bodies_refused_total", "counter", "Request bodies refused while being received, by code (body_memory_full: 503, body_timeout: 408, body_too_large: 413).")
	byLabel(b, "kl_request_bodies_refused_total", "code", m.bodyRefusals)
	header(b, "kl_commit_rows_total", "counter", "Database rows written by commits.")
	fmt.Fprintf(b, "kl_commit_rows_total %d\n", m.commitRows.Load())
	header(b, "kl_commit_bytes_total", "counter", "Bytes of values written by commits.")
	fmt.Fprintf(b, "kl_commit_bytes_total %d\n", m.commitBytes.Load())
}

// byLabel writes one sample of name per key of counts, sorted, under label.
func byLabel(b *bytes.Buffer, name, label string, counts map[string]uint64) {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s{%s=%s} %d\n", name, label, quote(k), counts[k])
	}
}

func header(b *bytes.Buffer, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// quote writes a label value with the escapes of the text format.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func cmpAll(cs ...int) int {
	for _, c := range cs {
		if c != 0 {
			return c
		}
	}
	return 0
}

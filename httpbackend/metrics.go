package httpbackend

import (
	"net/http"
	"time"

	"github.com/kilolock/kilolock"
)

// Metrics counts what a Handler does and serves its /metrics: kld's is
// prommetrics.New's, on a Prometheus registry. A Handler without one (kl's
// in-process one) counts nothing and answers /metrics 404, so that a
// program embedding the handler links no metrics library it does not
// serve.
type Metrics interface {
	ObserveRequest(route, method string, status int, d time.Duration)
	ObserveCommit(source kilolock.Source, stats kilolock.WriteStats)
	ObserveRefusal(reason string)              // a 409 conflict, by reason
	ObserveDenial(reason string, audited bool) // a request the authenticated lane refused
	ObserveBodyRefusal(code string)            // a request body refused while read
	ObserveAnswer(status int, code string)     // any error answer
	ObserveLockRefused()                       // a LOCK answered 423
	ObserveLockWaited()                        // a lock taken after a refusal
	// Attach is called once by New: it adds the series read from the
	// handler's state at scrape time (bodies returns the request body
	// bytes held, their budget and the bodies being read) and returns the
	// handlers of /metrics, byState for the operator (or anyone on an open
	// server), summed for a scrape without credentials under AuthToken.
	Attach(e *kilolock.Engine, bodies func() (held, limit, reading int64), log func(msg any, kv ...any)) (byState, summed http.Handler)
}

// noMetrics is the Metrics of a Handler given none.
type noMetrics struct{}

func (noMetrics) ObserveRequest(string, string, int, time.Duration)  {}
func (noMetrics) ObserveCommit(kilolock.Source, kilolock.WriteStats) {}
func (noMetrics) ObserveRefusal(string)                              {}
func (noMetrics) ObserveDenial(string, bool)                         {}
func (noMetrics) ObserveBodyRefusal(string)                          {}
func (noMetrics) ObserveAnswer(int, string)                          {}
func (noMetrics) ObserveLockRefused()                                {}
func (noMetrics) ObserveLockWaited()                                 {}
func (noMetrics) Attach(*kilolock.Engine, func() (int64, int64, int64), func(any, ...any)) (http.Handler, http.Handler) {
	return nil, nil
}

// errMetricsUnserved answers /metrics on a Handler without Metrics.
var errMetricsUnserved = &httpError{status: http.StatusNotFound, code: "metrics_unserved",
	message: "this handler serves no metrics",
	hint:    "scrape kld's /metrics; a program embedding the handler serves them with Options.Metrics (prommetrics.New)"}

// serveMetrics answers GET /metrics with Options.Metrics, the series by
// state only for those who may read them (metricsscope.go); 404 on a
// Handler without metrics.
func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if h.metricsHandler == nil {
		return errMetricsUnserved
	}
	serve, err := h.metricsFor(r)
	if err != nil {
		h.recordDenial(r, err)
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	serve.ServeHTTP(w, r)
	return nil
}

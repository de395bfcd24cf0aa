package prommetrics

import (
	"context"
	"time"

	"github.com/kilolock/kilolock/drift"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kilolock/kilolock"
)

// driftDesc is kl_drifted_instances: the open drift records of each state
// ever checked, read from the store at each scrape, so that every replica
// reports the same, database-wide.
var driftDesc = prometheus.NewDesc("kl_drifted_instances", "Instances whose open drift record says they differ from the real infrastructure (kl drift check), by state; a state never checked has no series.", []string{"state"}, nil)

// maxDriftSeries bounds the states one scrape reports.
const maxDriftSeries = 10_000

type driftCollector struct {
	engine *kilolock.Engine
	log    func(msg any, kv ...any)
}

func (c *driftCollector) Describe(ch chan<- *prometheus.Desc) { ch <- driftDesc }

func (c *driftCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := drift.DriftCounts(ctx, c.engine, nil)
	if err != nil {
		c.log("metrics: read drift counts", "err", err)
		return
	}
	n := 0
	for state, count := range counts {
		if n++; n > maxDriftSeries {
			break
		}
		ch <- prometheus.MustNewConstMetric(driftDesc, prometheus.GaugeValue, float64(count), state)
	}
}

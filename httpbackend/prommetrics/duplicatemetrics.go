package prommetrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kilolock/kilolock/inventory"
)

// duplicatesDesc is kl_duplicate_objects: by state, its objects that
// another state records too (inventory.Duplicates). Under AuthToken an
// anonymous scrape reads them summed (stateFamilies), naming no tenant.
var duplicatesDesc = prometheus.NewDesc("kl_duplicate_objects", "Managed objects of a state that another state records too (the same type and identity, arn, self_link or id: kl search --duplicates), by state; a state with none has no series.", []string{"state"}, nil)

// duplicatesEvery is how often a scrape reads the duplicates again: they
// take a pass over every current object, too much for every scrape of a
// large fleet. Scrapes between report the last reading.
const duplicatesEvery = time.Minute

// duplicatesTimeout bounds one reading.
const duplicatesTimeout = 10 * time.Second

type duplicateCollector struct {
	store inventory.Store
	log   func(msg any, kv ...any)

	mu      sync.Mutex
	counts  map[string]int
	readAt  time.Time
	reading bool
}

func (c *duplicateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- duplicatesDesc }

func (c *duplicateCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.current() {
		ch <- prometheus.MustNewConstMetric(duplicatesDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// current is the last reading, read again first when it is older than
// duplicatesEvery (by one scrape at a time; the others report the last).
func (c *duplicateCollector) current() map[string]int {
	c.mu.Lock()
	if c.reading || time.Since(c.readAt) < duplicatesEvery && c.counts != nil {
		counts := c.counts
		c.mu.Unlock()
		return counts
	}
	c.reading = true
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), duplicatesTimeout)
	defer cancel()
	dups, err := inventory.Duplicates(ctx, c.store, nil, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reading = false
	if err != nil {
		c.log("metrics: read duplicate objects", "err", err)
		return c.counts
	}
	counts := map[string]int{}
	for _, d := range dups {
		for _, o := range d.Objects {
			counts[o.State]++
		}
	}
	c.counts, c.readAt = counts, time.Now()
	return counts
}

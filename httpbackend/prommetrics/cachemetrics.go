package prommetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kilolock/kilolock"
)

// The series of the engine's cache of current versions (kld --state-cache),
// read from kilolock.Engine.CacheStats at each scrape: this process's, as
// each replica keeps its own.
var (
	cacheHitsDesc      = prometheus.NewDesc("kl_state_cache_hits_total", "Reads and writes that found what they needed of a state's current version in this kld's cache (a write needs its index, a read its document).", nil, nil)
	cacheMissesDesc    = prometheus.NewDesc("kl_state_cache_misses_total", "Reads and writes that loaded a state's current version from the database: the first use after start, after an eviction, or after another replica wrote.", nil, nil)
	cacheEvictionsDesc = prometheus.NewDesc("kl_state_cache_evictions_total", "States let go whole to stay within --state-cache: their next write or read loads them from the database.", nil, nil)
	cacheDocEvictDesc  = prometheus.NewDesc("kl_state_cache_document_evictions_total", "Documents let go to stay within --state-cache while their state's index was kept: the next write still costs what it changes, the next GET reads the document from the database.", nil, nil)
	cacheBytesDesc     = prometheus.NewDesc("kl_state_cache_bytes", "Bytes the cache holds: indexes, documents and their compressed copies (in memory, or in --spool-dir when large), and the graphs readers asked for.", nil, nil)
	cacheLimitDesc     = prometheus.NewDesc("kl_state_cache_limit_bytes", "The cache's budget (kld --state-cache).", nil, nil)
	cacheStatesDesc    = prometheus.NewDesc("kl_state_cache_states", "States the cache keeps, by whether it keeps their document too.", []string{"document"}, nil)
)

type cacheCollector struct{ engine *kilolock.Engine }

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cacheHitsDesc, cacheMissesDesc, cacheEvictionsDesc, cacheDocEvictDesc, cacheBytesDesc, cacheLimitDesc, cacheStatesDesc} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.engine.CacheStats()
	ch <- prometheus.MustNewConstMetric(cacheHitsDesc, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(cacheMissesDesc, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(cacheEvictionsDesc, prometheus.CounterValue, float64(s.Evictions))
	ch <- prometheus.MustNewConstMetric(cacheDocEvictDesc, prometheus.CounterValue, float64(s.DocumentEvictions))
	ch <- prometheus.MustNewConstMetric(cacheBytesDesc, prometheus.GaugeValue, float64(s.Bytes))
	ch <- prometheus.MustNewConstMetric(cacheLimitDesc, prometheus.GaugeValue, float64(s.Budget))
	ch <- prometheus.MustNewConstMetric(cacheStatesDesc, prometheus.GaugeValue, float64(s.Documents), "kept")
	ch <- prometheus.MustNewConstMetric(cacheStatesDesc, prometheus.GaugeValue, float64(s.States-s.Documents), "let_go")
}

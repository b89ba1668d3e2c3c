package prometheus

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockmux/lockmux/redlock"
)

// Options configures a Collector. The zero value is ready.
type Options struct {
	// ConstLabels are added to every metric, to tell apart the Collectors
	// of several Clients registered together (for example
	// {"cluster": "orders"}). Nil means none.
	ConstLabels prometheus.Labels
}

// Collector is a prometheus.Collector of a Client's Stats. It is safe for
// concurrent use.
type Collector struct {
	client *redlock.Client

	lockAttempts *prometheus.Desc
	releases     *prometheus.Desc
	extensions   *prometheus.Desc
	holdsLost    *prometheus.Desc
	nodeErrors   *prometheus.Desc
	nodeTimeouts *prometheus.Desc
	quarantined  *prometheus.Desc

	acquireDuration *prometheus.Desc
	releaseDuration *prometheus.Desc
	extendDuration  *prometheus.Desc

	// bounds are the upper bounds of the Stats histograms' finite
	// buckets, in seconds.
	bounds [redlock.HistogramBuckets - 1]float64
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector of client's Stats. Register it with a
// prometheus.Registerer; it reads the Stats at each scrape.
func NewCollector(client *redlock.Client, options Options) *Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("lockmux_"+name, help, labels, options.ConstLabels)
	}
	c := &Collector{
		client:       client,
		lockAttempts: desc("lock_attempts_total", "Acquisition attempts (rounds to the nodes), by result.", "result"),
		releases:     desc("releases_total", "Releases, by result: released on a quorum, or lost when the hold was found gone.", "result"),
		extensions:   desc("extensions_total", "Extension attempts, explicit or automatic, by result.", "result"),
		holdsLost:    desc("holds_lost_total", "Holds that ended before their release."),
		nodeErrors:   desc("node_errors_total", "Node failures in rounds: errors, timeouts and commands not sent."),
		nodeTimeouts: desc("node_timeouts_total", "Node timeouts in rounds, also counted in lockmux_node_errors_total."),
		quarantined:  desc("quarantined_votes_total", "Node confirmations that did not count because their node was quarantined."),

		acquireDuration: desc("acquire_duration_seconds", "Duration of acquisition attempts, successful or not."),
		releaseDuration: desc("release_duration_seconds", "Duration of releases."),
		extendDuration:  desc("extend_duration_seconds", "Duration of extension attempts."),
	}
	bounds := redlock.HistogramBounds()
	for i := range c.bounds {
		c.bounds[i] = bounds[i].Seconds()
	}
	return c
}

// Describe sends the descriptions of every metric.
func (c *Collector) Describe(descriptions chan<- *prometheus.Desc) {
	for _, description := range []*prometheus.Desc{
		c.lockAttempts, c.releases, c.extensions, c.holdsLost, c.nodeErrors, c.nodeTimeouts, c.quarantined,
		c.acquireDuration, c.releaseDuration, c.extendDuration,
	} {
		descriptions <- description
	}
}

// Collect sends the metrics of one Stats of the Client.
func (c *Collector) Collect(metrics chan<- prometheus.Metric) {
	stats := c.client.Stats()
	counter := func(description *prometheus.Desc, value uint64, labels ...string) {
		metrics <- constMetric(description, prometheus.CounterValue, float64(value), labels...)
	}
	counter(c.lockAttempts, stats.Acquired, "acquired")
	counter(c.lockAttempts, stats.NotAcquired, "not_acquired")
	counter(c.releases, stats.Released, "released")
	counter(c.releases, stats.ReleaseLost, "lost")
	counter(c.extensions, stats.Extended, "extended")
	counter(c.extensions, stats.ExtendFailed, "failed")
	counter(c.holdsLost, stats.Lost)
	counter(c.nodeErrors, stats.NodeErrors)
	counter(c.nodeTimeouts, stats.NodeTimeouts)
	counter(c.quarantined, stats.Quarantined)
	metrics <- c.histogram(c.acquireDuration, stats.Acquire)
	metrics <- c.histogram(c.releaseDuration, stats.Release)
	metrics <- c.histogram(c.extendDuration, stats.Extend)
}

// constMetric returns a metric of one value, or an invalid metric that
// makes the scrape report the error, rather than a panic.
func constMetric(description *prometheus.Desc, kind prometheus.ValueType, value float64, labels ...string) prometheus.Metric {
	metric, err := prometheus.NewConstMetric(description, kind, value, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(description, err)
	}
	return metric
}

// histogram returns a Stats histogram as a Prometheus histogram: its
// finite buckets made cumulative, and its count and sum in seconds.
func (c *Collector) histogram(description *prometheus.Desc, histogram redlock.Histogram) prometheus.Metric {
	buckets := make(map[float64]uint64, len(c.bounds))
	var cumulative uint64
	for i, bound := range c.bounds {
		cumulative += histogram.Buckets[i]
		buckets[bound] = cumulative
	}
	// Count, the sum of every bucket with the last, unbounded one, is the
	// +Inf bucket.
	metric, err := prometheus.NewConstHistogram(description, histogram.Count, histogram.Sum.Seconds(), buckets)
	if err != nil {
		return prometheus.NewInvalidMetric(description, err)
	}
	return metric
}

// Package prometheus exports a redlock.Client's Stats as Prometheus
// metrics: a Collector, registered with a prometheus.Registerer, reads
// Client.Stats at each scrape. Import it under a name of its own, for
// example lockmuxprometheus, beside the client library's package.
//
// The metrics, all prefixed lockmux_, are counters ending in _total and
// histograms in seconds:
//
//	lockmux_lock_attempts_total{result="acquired"|"not_acquired"}
//	lockmux_releases_total{result="released"|"lost"}
//	lockmux_extensions_total{result="extended"|"failed"}
//	lockmux_holds_lost_total
//	lockmux_node_errors_total
//	lockmux_node_timeouts_total
//	lockmux_quarantined_votes_total
//	lockmux_acquire_duration_seconds
//	lockmux_release_duration_seconds
//	lockmux_extend_duration_seconds
//
// No label takes a lock's key or any other value without bound. Give
// Options.ConstLabels to tell the Collectors of several Clients apart.
//
// # Concurrency
//
// A Collector is safe for concurrent use. It costs the Client nothing
// between scrapes: a scrape takes one Stats, whose counters are read one
// at a time while operations go on.
//
// # Errors
//
// A Collector returns no errors. NewCollector never fails; a Registerer
// refuses a second Collector with the same ConstLabels.
package prometheus

// Package otel reports what a redlock.Client does to OpenTelemetry: an
// Observer, set as the Client's Options.Observer, records a span for each
// acquisition attempt, extension, renewal, release and lost hold, and feeds
// the same metrics as the module github.com/lockmux/lockmux/contrib/prometheus
// through the OpenTelemetry metrics API. Import it under a name of its own,
// for example lockmuxotel, beside OpenTelemetry's packages.
//
// # Spans
//
// The Observer is told of an operation when it has ended, so each span is
// made after the fact: it starts at the end less the operation's duration
// and ends at the moment the Observer is told. Its kind is client, and it
// has the attribute db.system.name "redis" of OpenTelemetry's semantic
// conventions (v1.43.0). The spans are the roots of traces of their own:
// the events carry no context to take a parent from.
//
//	lockmux.lock     one acquisition attempt of Lock or TryLock
//	lockmux.extend   an extension, or a renewal (lockmux.automatic true)
//	lockmux.unlock   a release
//	lockmux.lost     a hold that ended before its release, from its
//	                 acquisition to the moment the loss was found
//
// Their attributes are lockmux.result (acquired, not_acquired, extended,
// failed, released, lost), lockmux.got and lockmux.need (the nodes that
// confirmed and the quorum), lockmux.attempt, lockmux.validity and
// lockmux.held (in seconds), and lockmux.key only with Options.RecordKeys.
// A failed operation has the status Error and the attribute error.type,
// and, when its error is a *redlock.QuorumError, one event lockmux.node
// per node with server.address, server.port, lockmux.node.outcome,
// lockmux.node.latency (seconds) and lockmux.node.error.
//
// # Metrics
//
// The instruments are counters and histograms in seconds, fed by the
// events:
//
//	lockmux.lock.attempts{lockmux.result="acquired"|"not_acquired"}
//	lockmux.releases{lockmux.result="released"|"lost"}
//	lockmux.extensions{lockmux.result="extended"|"failed"}
//	lockmux.holds.lost
//	lockmux.node.errors
//	lockmux.node.timeouts
//	lockmux.quarantined_votes
//	lockmux.acquire.duration
//	lockmux.release.duration
//	lockmux.extend.duration
//
// The histograms advise the buckets of redlock.Histogram. No attribute of
// a metric takes a lock's key or a node's address. The counters count the
// events, so they start at zero when the Client is made, as its Stats do,
// and agree with them, but for an attempt found void because two addresses
// reach one server (redlock.ErrDuplicateNode): Stats counts it, and no
// event reports it.
//
// # Cost
//
// A measurement allocates nothing: with Options.MetricsOnly, an
// uncontended Lock+Unlock cycle allocates no more than without an
// Observer. A span costs a few allocations, even with a no-op tracer.
//
// # Concurrency
//
// An Observer is safe for concurrent use. Its methods are called on the
// goroutines of the Client's operations: give the TracerProvider a
// batching span processor, not one that exports as each span ends.
//
// # Errors
//
// An Observer returns no errors. New fails only when the meter refuses to
// make an instrument.
package otel

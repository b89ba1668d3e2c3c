package otel

import (
	"context"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockmux/lockmux/redlock"
)

// ScopeName is the instrumentation scope of the Observer's tracer and
// meter: this module's path.
const ScopeName = "github.com/lockmux/lockmux/contrib/otel"

// Options configures an Observer. The zero value is ready: it uses the
// global providers and records no keys.
type Options struct {
	// TracerProvider makes the Observer's tracer. Nil means the global
	// provider, otel.GetTracerProvider(), as it is when New is called.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the Observer's meter. Nil means the global
	// provider, otel.GetMeterProvider(), as it is when New is called.
	MeterProvider metric.MeterProvider
	// RecordKeys adds each lock's key to its spans, as lockmux.key, and
	// gives a failed span the error's message, which names the key, as its
	// status description (otherwise the error.type). False by default: a
	// key can be anything, and an application's keys may be many or
	// private. Keys are never attributes of metrics.
	RecordKeys bool
	// MetricsOnly records no spans, only metrics. False by default. A span
	// costs allocations even with a no-op tracer; the metrics cost none.
	MetricsOnly bool
	// Attributes are added to every span and every measurement, to tell
	// apart the Observers of several Clients (for example
	// attribute.String("lockmux.client", "orders")). Their values must be
	// few. Nil means none.
	Attributes []attribute.KeyValue
}

// Observer is a redlock.Observer that records spans and metrics through
// OpenTelemetry. Make one with New and set it as Options.Observer of a
// Client, alone or with others through redlock.Observers. It is safe for
// concurrent use.
type Observer struct {
	tracer      trace.Tracer
	recordKeys  bool
	metricsOnly bool
	// spanAttributes are the attributes of every span: db.system.name and
	// Options.Attributes. Never changed after New.
	spanAttributes []attribute.KeyValue
	metrics        instruments
}

var _ redlock.Observer = (*Observer)(nil)

// New returns an Observer that records through the providers of options.
// It fails when the meter refuses to make an instrument.
func New(options Options) (*Observer, error) {
	tracerProvider := options.TracerProvider
	if tracerProvider == nil {
		tracerProvider = otelglobal.GetTracerProvider()
	}
	meterProvider := options.MeterProvider
	if meterProvider == nil {
		meterProvider = otelglobal.GetMeterProvider()
	}
	common := append([]attribute.KeyValue(nil), options.Attributes...)
	metrics, err := newInstruments(meterProvider.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL)), common)
	if err != nil {
		return nil, err
	}
	return &Observer{
		tracer:         tracerProvider.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		recordKeys:     options.RecordKeys,
		metricsOnly:    options.MetricsOnly,
		spanAttributes: append([]attribute.KeyValue{semconv.DBSystemNameRedis}, common...),
		metrics:        metrics,
	}, nil
}

// The names of the spans.
const (
	spanLock   = "lockmux.lock"
	spanExtend = "lockmux.extend"
	spanUnlock = "lockmux.unlock"
	spanLost   = "lockmux.lost"
)

// The attribute keys of this package.
const (
	keyKey         = attribute.Key("lockmux.key")
	keyResult      = attribute.Key("lockmux.result")
	keyGot         = attribute.Key("lockmux.got")
	keyNeed        = attribute.Key("lockmux.need")
	keyAttempt     = attribute.Key("lockmux.attempt")
	keyAutomatic   = attribute.Key("lockmux.automatic")
	keyValidity    = attribute.Key("lockmux.validity")
	keyHeld        = attribute.Key("lockmux.held")
	keyNodeOutcome = attribute.Key("lockmux.node.outcome")
	keyNodeLatency = attribute.Key("lockmux.node.latency")
	keyNodeError   = attribute.Key("lockmux.node.error")
)

// The values of lockmux.result.
const (
	resultAcquired    = "acquired"
	resultNotAcquired = "not_acquired"
	resultExtended    = "extended"
	resultFailed      = "failed"
	resultReleased    = "released"
	resultLost        = "lost"
)

// OnAcquire records a lockmux.lock span and counts the attempt.
func (o *Observer) OnAcquire(event redlock.AcquireEvent) {
	o.metrics.acquire(event.Elapsed, event.Err == nil)
	if o.metricsOnly {
		return
	}
	result := resultAcquired
	if event.Err != nil {
		result = resultNotAcquired
	}
	o.record(spanLock, event.Key, event.Elapsed, event.Err, append(o.attributes(5),
		keyResult.String(result), keyAttempt.Int(event.Attempt),
		keyGot.Int(event.Got), keyNeed.Int(event.Need), keyValidity.Float64(event.Validity.Seconds())))
}

// OnRelease records a lockmux.unlock span and counts the release.
func (o *Observer) OnRelease(event redlock.ReleaseEvent) {
	o.metrics.release(event.Elapsed, event.Err == nil)
	if o.metricsOnly {
		return
	}
	result := resultReleased
	if event.Err != nil {
		result = resultLost
	}
	o.record(spanUnlock, event.Key, event.Elapsed, event.Err, append(o.attributes(4),
		keyResult.String(result), keyGot.Int(event.Got), keyNeed.Int(event.Need), keyHeld.Float64(event.Held.Seconds())))
}

// OnExtend records a lockmux.extend span, with lockmux.automatic true for
// a renewal, and counts the extension.
func (o *Observer) OnExtend(event redlock.ExtendEvent) {
	o.metrics.extend(event.Elapsed, event.Err == nil)
	if o.metricsOnly {
		return
	}
	result := resultExtended
	if event.Err != nil {
		result = resultFailed
	}
	o.record(spanExtend, event.Key, event.Elapsed, event.Err, append(o.attributes(5),
		keyResult.String(result), keyAutomatic.Bool(event.Automatic),
		keyGot.Int(event.Got), keyNeed.Int(event.Need), keyValidity.Float64(event.Validity.Seconds())))
}

// OnLost records a lockmux.lost span, from the hold's acquisition to the
// moment its loss was found, and counts the loss.
func (o *Observer) OnLost(event redlock.LostEvent) {
	o.metrics.lost()
	if o.metricsOnly {
		return
	}
	o.record(spanLost, event.Key, event.Held, event.Err, append(o.attributes(2),
		keyResult.String(resultLost), keyHeld.Float64(event.Held.Seconds())))
}

// OnNodeError counts a node's failure, or the vote of a quarantined node.
// It records no span: the span of the operation has the node's outcome
// when the operation failed. A node that cannot notify
// (redlock.OperationSubscribe) is not counted, as in Client.Stats.
func (o *Observer) OnNodeError(event redlock.NodeErrorEvent) {
	if event.Operation == redlock.OperationSubscribe {
		return
	}
	o.metrics.nodeError(event.Outcome)
}

// attributes returns an empty slice with room for n attributes of an
// event, the Observer's own and the key, so that a span's attributes take
// one allocation.
func (o *Observer) attributes(n int) []attribute.KeyValue {
	return make([]attribute.KeyValue, 0, n+len(o.spanAttributes)+1)
}

// record makes the span called name of an operation that took elapsed
// and ended now, with attributes (made by o.attributes) and the
// Observer's own. The attributes are given when the span starts, where
// samplers see them.
func (o *Observer) record(name, key string, elapsed time.Duration, err error, attributes []attribute.KeyValue) {
	end := time.Now()
	start := end.Add(-max(elapsed, 0))
	attributes = append(attributes, o.spanAttributes...)
	if o.recordKeys {
		attributes = append(attributes, keyKey.String(key))
	}
	_, span := o.tracer.Start(context.Background(), name, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attributes...))
	if !span.IsRecording() {
		span.End()
		return
	}
	if err != nil {
		o.fail(span, start, err)
	}
	span.End(trace.WithTimestamp(end))
}

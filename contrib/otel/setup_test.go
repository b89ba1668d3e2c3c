package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	lockmuxotel "github.com/lockmux/lockmux/contrib/otel"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// telemetry is an Observer whose spans and metrics stay in memory.
type telemetry struct {
	observer *lockmuxotel.Observer
	spans    *tracetest.SpanRecorder
	reader   *sdkmetric.ManualReader
}

// newTelemetry returns an Observer with options, on in-memory providers.
func newTelemetry(t *testing.T, options lockmuxotel.Options) *telemetry {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	options.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	options.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	observer, err := lockmuxotel.New(options)
	require.NoError(t, err)
	return &telemetry{observer: observer, spans: spans, reader: reader}
}

// ended returns the spans that ended, in the order they ended.
func (tm *telemetry) ended() []sdktrace.ReadOnlySpan {
	return tm.spans.Ended()
}

// names returns the names of the spans that ended, in order.
func (tm *telemetry) names() []string {
	var names []string
	for _, span := range tm.ended() {
		names = append(names, span.Name())
	}
	return names
}

// metrics returns the metrics of the Observer's scope, by name.
func (tm *telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var collected metricdata.ResourceMetrics
	require.NoError(t, tm.reader.Collect(context.Background(), &collected))
	metrics := map[string]metricdata.Aggregation{}
	for _, scope := range collected.ScopeMetrics {
		require.Equal(t, lockmuxotel.ScopeName, scope.Scope.Name)
		for _, m := range scope.Metrics {
			metrics[m.Name] = m.Data
		}
	}
	return metrics
}

// counterValue returns the value of the counter name whose attributes
// are exactly attributes, or zero when it has no such point.
func counterValue(t *testing.T, metrics map[string]metricdata.Aggregation, name string, attributes ...attribute.KeyValue) int64 {
	t.Helper()
	data, ok := metrics[name]
	if !ok {
		return 0
	}
	sum, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T", name, data)
	require.True(t, sum.IsMonotonic, name)
	want := attribute.NewSet(attributes...)
	for _, point := range sum.DataPoints {
		if point.Attributes.Equals(&want) {
			return point.Value
		}
	}
	return 0
}

// histogramPoint returns the only point of the histogram name.
func histogramPoint(t *testing.T, metrics map[string]metricdata.Aggregation, name string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	histogram, ok := metrics[name].(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", name, metrics[name])
	require.Len(t, histogram.DataPoints, 1, name)
	return histogram.DataPoints[0]
}

// attributesOf returns a span's or an event's attributes by key.
func attributesOf(attributes []attribute.KeyValue) map[attribute.Key]attribute.Value {
	byKey := map[attribute.Key]attribute.Value{}
	for _, a := range attributes {
		byKey[a.Key] = a.Value
	}
	return byKey
}

// newClient returns a Client over addresses with observer, closed when
// the test ends. Its node timeout is generous: a busy machine must not
// fail a round.
func newClient(t *testing.T, addresses []string, observer redlock.Observer) *redlock.Client {
	t.Helper()
	client, err := redlock.New(addresses, redlock.Options{NodeTimeout: 5 * time.Second, Observer: observer})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client
}

// addressesOf returns the servers' addresses.
func addressesOf(servers []*redistest.Server) []string {
	var addresses []string
	for _, server := range servers {
		addresses = append(addresses, server.Addr())
	}
	if err := trustednodes.Trust(context.Background(), addresses, redlock.Options{}); err != nil {
		panic(err) // the test started the servers: they answer
	}
	return addresses
}

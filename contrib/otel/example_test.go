package otel_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	lockmuxotel "github.com/lockmux/lockmux/contrib/otel"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// Trace and count a Client's operations. A service gives New the providers
// it exports with (or none, for the global ones); this example keeps the
// spans and metrics in memory and prints them.
func Example() {
	addresses, stop := trustednodes.Start(3)
	defer stop()
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	observer, err := lockmuxotel.New(lockmuxotel.Options{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		panic(err)
	}
	client, err := redlock.New(addresses, redlock.Options{NodeTimeout: time.Second, Observer: observer})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("orders:1001", redlock.MutexOptions{TTL: 10 * time.Second})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}

	for _, span := range spans.Ended() {
		for _, a := range span.Attributes() {
			if a.Key == "lockmux.result" {
				fmt.Println(span.Name(), a.Value.AsString())
			}
		}
	}
	var collected metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &collected); err != nil {
		panic(err)
	}
	for _, scope := range collected.ScopeMetrics {
		for _, metric := range scope.Metrics {
			if sum, ok := metric.Data.(metricdata.Sum[int64]); ok {
				for _, point := range sum.DataPoints {
					result, _ := point.Attributes.Value(attribute.Key("lockmux.result"))
					fmt.Println(metric.Name, result.AsString(), point.Value)
				}
			}
		}
	}
	// Output:
	// lockmux.lock acquired
	// lockmux.unlock released
	// lockmux.lock.attempts acquired 1
	// lockmux.releases released 1
}

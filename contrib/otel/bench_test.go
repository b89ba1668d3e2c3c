package otel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	lockmuxotel "github.com/lockmux/lockmux/contrib/otel"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// BenchmarkCycle measures what the Observer costs a Lock+Unlock cycle on
// three nodes, against no observer, in one run: with OpenTelemetry's no-op
// providers, with the SDK's metrics alone (MetricsOnly), and with the
// SDK's spans (sampled, exported nowhere) and metrics:
//
//	go test -run '^$' -bench Cycle -benchmem ./
func BenchmarkCycle(b *testing.B) {
	addresses := addressesOf(redistest.StartN(b, 3, redistest.Options{}))
	newObserver := func(options lockmuxotel.Options) redlock.Observer {
		observer, err := lockmuxotel.New(options)
		if err != nil {
			b.Fatal(err)
		}
		return observer
	}
	sdkMeters := func() *sdkmetric.MeterProvider {
		return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	}
	observers := []struct {
		name     string
		observer redlock.Observer
	}{
		{name: "none"},
		{name: "otel/noop", observer: newObserver(lockmuxotel.Options{
			TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: noop.NewMeterProvider()})},
		{name: "otel/metrics", observer: newObserver(lockmuxotel.Options{MetricsOnly: true, MeterProvider: sdkMeters()})},
		{name: "otel/spans+metrics", observer: newObserver(lockmuxotel.Options{
			TracerProvider: sdktrace.NewTracerProvider(), MeterProvider: sdkMeters()})},
	}
	for _, o := range observers {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			// A generous node timeout: a busy machine must not fail a round.
			client, err := redlock.New(addresses, redlock.Options{NodeTimeout: 5 * time.Second, Observer: o.observer})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			ctx := context.Background()
			m := client.NewMutex("bench:"+o.name, redlock.MutexOptions{})
			for b.Loop() {
				if err := m.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := m.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

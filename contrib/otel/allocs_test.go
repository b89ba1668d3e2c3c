//go:build !race

package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	lockmuxotel "github.com/lockmux/lockmux/contrib/otel"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// TestMetricsOnlyCycleDoesNotAllocate pins that an Observer with
// MetricsOnly, on the SDK's meter provider, adds no allocation to an
// uncontended Lock+Unlock cycle: each measurement's options are made once.
func TestMetricsOnlyCycleDoesNotAllocate(t *testing.T) {
	redistest.RequireReal(t) // an in-process server's allocations would count too
	observer, err := lockmuxotel.New(lockmuxotel.Options{
		MetricsOnly:   true,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
	})
	require.NoError(t, err)
	client, err := redlock.New(addressesOf(redistest.StartN(t, 3, redistest.Options{})), redlock.Options{
		NodeTimeout: 5 * time.Second,
		Observer:    observer,
	})
	require.NoError(t, err)
	defer client.Close()
	ctx := context.Background()
	m := client.NewMutex("allocs:otel", redlock.MutexOptions{})
	cycle := func() {
		if err := m.Lock(ctx); err != nil {
			panic(err)
		}
		if err := m.Unlock(ctx); err != nil {
			panic(err)
		}
	}
	cycle()
	assert.Zero(t, testing.AllocsPerRun(100, cycle))
}

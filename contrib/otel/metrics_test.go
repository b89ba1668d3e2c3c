package otel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	lockmuxotel "github.com/lockmux/lockmux/contrib/otel"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// The metrics say what a Client on real servers did, as its Stats do:
// acquisitions won and refused, extensions that succeeded and failed, a
// hold lost, the releases, and the durations in the same buckets.
func TestMetricsCountWhatAClientDid(t *testing.T) {
	tm := newTelemetry(t, lockmuxotel.Options{})
	servers := redistest.StartN(t, 3, redistest.Options{})
	client := newClient(t, addressesOf(servers), tm.observer)
	ctx := context.Background()

	// Two cycles with an extension each.
	m := client.NewMutex("orders:1", redlock.MutexOptions{TTL: 10 * time.Second})
	for range 2 {
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Extend(ctx))
		require.NoError(t, m.Unlock(ctx))
	}
	// A refused attempt: another client holds the lock.
	holder := newClient(t, addressesOf(servers), nil).NewMutex("orders:2", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, holder.Lock(ctx))
	require.ErrorIs(t, client.NewMutex("orders:2", redlock.MutexOptions{}).TryLock(ctx), redlock.ErrNotAcquired)
	// A hold whose keys every node lost: the extension fails and finds
	// it lost, and its release finds it gone.
	lost := client.NewMutex("orders:3", redlock.MutexOptions{TTL: 10 * time.Second})
	require.NoError(t, lost.Lock(ctx))
	for _, server := range servers {
		server.Do(t, "FLUSHALL")
	}
	require.ErrorIs(t, lost.Extend(ctx), redlock.ErrLockLost)
	require.ErrorIs(t, lost.Unlock(ctx), redlock.ErrLockLost)

	metrics := tm.metrics(t)
	result := func(value string) attribute.KeyValue { return attribute.String("lockmux.result", value) }
	assert.Equal(t, int64(3), counterValue(t, metrics, "lockmux.lock.attempts", result("acquired")))
	assert.Equal(t, int64(1), counterValue(t, metrics, "lockmux.lock.attempts", result("not_acquired")))
	assert.Equal(t, int64(2), counterValue(t, metrics, "lockmux.extensions", result("extended")))
	assert.Equal(t, int64(1), counterValue(t, metrics, "lockmux.extensions", result("failed")))
	assert.Equal(t, int64(2), counterValue(t, metrics, "lockmux.releases", result("released")))
	assert.Equal(t, int64(1), counterValue(t, metrics, "lockmux.releases", result("lost")))
	assert.Equal(t, int64(1), counterValue(t, metrics, "lockmux.holds.lost"))
	assert.Equal(t, int64(0), counterValue(t, metrics, "lockmux.node.errors"))

	// The same counts as the Client's Stats, and the same histograms.
	stats := client.Stats()
	assert.Equal(t, stats.Acquired, uint64(counterValue(t, metrics, "lockmux.lock.attempts", result("acquired"))))
	assert.Equal(t, stats.NotAcquired, uint64(counterValue(t, metrics, "lockmux.lock.attempts", result("not_acquired"))))
	assert.Equal(t, stats.Extended, uint64(counterValue(t, metrics, "lockmux.extensions", result("extended"))))
	assert.Equal(t, stats.ExtendFailed, uint64(counterValue(t, metrics, "lockmux.extensions", result("failed"))))
	assert.Equal(t, stats.Released, uint64(counterValue(t, metrics, "lockmux.releases", result("released"))))
	assert.Equal(t, stats.ReleaseLost, uint64(counterValue(t, metrics, "lockmux.releases", result("lost"))))
	assert.Equal(t, stats.Lost, uint64(counterValue(t, metrics, "lockmux.holds.lost")))
	bounds := redlock.HistogramBounds()
	for name, want := range map[string]redlock.Histogram{
		"lockmux.acquire.duration": stats.Acquire,
		"lockmux.release.duration": stats.Release,
		"lockmux.extend.duration":  stats.Extend,
	} {
		point := histogramPoint(t, metrics, name)
		assert.Equal(t, want.Count, point.Count, name)
		assert.Equal(t, want.Buckets[:], point.BucketCounts, name)
		assert.InDelta(t, want.Sum.Seconds(), point.Sum, 1e-6, name)
		require.Len(t, point.Bounds, redlock.HistogramBuckets-1, name)
		for i, bound := range point.Bounds {
			assert.Equal(t, bounds[i].Seconds(), bound, name)
		}
	}
	assert.Equal(t, uint64(4), stats.Acquire.Count)
	assert.Equal(t, uint64(3), stats.Release.Count)
	assert.Equal(t, uint64(3), stats.Extend.Count)
}

// Failed nodes are counted, with the attributes that tell this Client's
// metrics apart.
func TestMetricsCountNodeErrors(t *testing.T) {
	client := attribute.String("lockmux.client", "orders")
	tm := newTelemetry(t, lockmuxotel.Options{Attributes: []attribute.KeyValue{client}})
	addresses := append(addressesOf(redistest.StartN(t, 1, redistest.Options{})), redistest.ClosedAddress(t), redistest.ClosedAddress(t))
	require.ErrorIs(t, newClient(t, addresses, tm.observer).NewMutex("orders:5", redlock.MutexOptions{}).TryLock(context.Background()), redlock.ErrNotAcquired)

	metrics := tm.metrics(t)
	assert.Equal(t, int64(2), counterValue(t, metrics, "lockmux.node.errors", client))
	assert.Equal(t, int64(0), counterValue(t, metrics, "lockmux.node.timeouts", client))
	assert.Equal(t, int64(1), counterValue(t, metrics, "lockmux.lock.attempts", client, attribute.String("lockmux.result", "not_acquired")))
	assert.Equal(t, uint64(1), histogramPoint(t, metrics, "lockmux.acquire.duration").Count)
}

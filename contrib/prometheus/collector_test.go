package prometheus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lockmuxprometheus "github.com/lockmux/lockmux/contrib/prometheus"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/trustednodes"
	"github.com/lockmux/lockmux/redlock"
)

// newClient returns a Client over addresses, closed when the test ends.
// Its node timeout is generous: a busy machine must not fail a round.
func newClient(t *testing.T, addresses []string) *redlock.Client {
	t.Helper()
	client, err := redlock.New(addresses, redlock.Options{NodeTimeout: 5 * time.Second})
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

// The counters say what a Client on real servers did: acquisitions won
// and refused, extensions that succeeded and failed, a hold lost, and the
// releases.
func TestCollectorCountsWhatAClientDid(t *testing.T) {
	servers := redistest.StartN(t, 3, redistest.Options{})
	client := newClient(t, addressesOf(servers))
	registry := prometheus.NewPedanticRegistry()
	require.NoError(t, registry.Register(lockmuxprometheus.NewCollector(client, lockmuxprometheus.Options{})))
	ctx := context.Background()

	// Two cycles with an extension each.
	m := client.NewMutex("orders:1", redlock.MutexOptions{TTL: 10 * time.Second})
	for range 2 {
		require.NoError(t, m.Lock(ctx))
		require.NoError(t, m.Extend(ctx))
		require.NoError(t, m.Unlock(ctx))
	}
	// A refused attempt: another client holds the lock.
	holder := newClient(t, addressesOf(servers)).NewMutex("orders:2", redlock.MutexOptions{TTL: 10 * time.Second})
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

	want := `
# HELP lockmux_extensions_total Extension attempts, explicit or automatic, by result.
# TYPE lockmux_extensions_total counter
lockmux_extensions_total{result="extended"} 2
lockmux_extensions_total{result="failed"} 1
# HELP lockmux_holds_lost_total Holds that ended before their release.
# TYPE lockmux_holds_lost_total counter
lockmux_holds_lost_total 1
# HELP lockmux_lock_attempts_total Acquisition attempts (rounds to the nodes), by result.
# TYPE lockmux_lock_attempts_total counter
lockmux_lock_attempts_total{result="acquired"} 3
lockmux_lock_attempts_total{result="not_acquired"} 1
# HELP lockmux_node_errors_total Node failures in rounds: errors, timeouts and commands not sent.
# TYPE lockmux_node_errors_total counter
lockmux_node_errors_total 0
# HELP lockmux_releases_total Releases, by result: released on a quorum, or lost when the hold was found gone.
# TYPE lockmux_releases_total counter
lockmux_releases_total{result="lost"} 1
lockmux_releases_total{result="released"} 2
`
	names := []string{"lockmux_extensions_total", "lockmux_holds_lost_total", "lockmux_lock_attempts_total",
		"lockmux_node_errors_total", "lockmux_releases_total"}
	assert.NoError(t, testutil.GatherAndCompare(registry, strings.NewReader(want), names...))

	// Each attempt is in the acquisition histogram, with its duration.
	families, err := registry.Gather()
	require.NoError(t, err)
	histograms := map[string]uint64{}
	for _, family := range families {
		if strings.HasSuffix(family.GetName(), "_duration_seconds") {
			histogram := family.GetMetric()[0].GetHistogram()
			histograms[family.GetName()] = histogram.GetSampleCount()
			buckets := histogram.GetBucket()
			assert.Len(t, buckets, redlock.HistogramBuckets-1, family.GetName())
			assert.Equal(t, 16e-6, buckets[0].GetUpperBound())
			if histogram.GetSampleCount() > 0 {
				assert.Positive(t, histogram.GetSampleSum(), family.GetName())
			}
		}
	}
	assert.Equal(t, map[string]uint64{
		"lockmux_acquire_duration_seconds": 4,
		"lockmux_release_duration_seconds": 3,
		"lockmux_extend_duration_seconds":  3,
	}, histograms)
}

// Failed nodes are counted; a label tells this Client's metrics apart.
func TestCollectorCountsNodeErrors(t *testing.T) {
	addresses := append(addressesOf(redistest.StartN(t, 1, redistest.Options{})), redistest.ClosedAddress(t), redistest.ClosedAddress(t))
	client := newClient(t, addresses)
	registry := prometheus.NewPedanticRegistry()
	collector := lockmuxprometheus.NewCollector(client, lockmuxprometheus.Options{ConstLabels: prometheus.Labels{"cluster": "orders"}})
	require.NoError(t, registry.Register(collector))
	require.ErrorIs(t, client.NewMutex("orders:5", redlock.MutexOptions{}).TryLock(context.Background()), redlock.ErrNotAcquired)

	want := `
# HELP lockmux_node_errors_total Node failures in rounds: errors, timeouts and commands not sent.
# TYPE lockmux_node_errors_total counter
lockmux_node_errors_total{cluster="orders"} 2
# HELP lockmux_node_timeouts_total Node timeouts in rounds, also counted in lockmux_node_errors_total.
# TYPE lockmux_node_timeouts_total counter
lockmux_node_timeouts_total{cluster="orders"} 0
`
	assert.NoError(t, testutil.GatherAndCompare(registry, strings.NewReader(want), "lockmux_node_errors_total", "lockmux_node_timeouts_total"))
}

// The metrics follow Prometheus's naming conventions, and each scrape
// sends the same set of metrics, also before the first operation.
func TestCollectorPassesTheLinter(t *testing.T) {
	client := newClient(t, addressesOf(redistest.StartN(t, 1, redistest.Options{})))
	registry := prometheus.NewPedanticRegistry()
	require.NoError(t, registry.Register(lockmuxprometheus.NewCollector(client, lockmuxprometheus.Options{})))
	problems, err := testutil.GatherAndLint(registry)
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 13, testutil.CollectAndCount(lockmuxprometheus.NewCollector(client, lockmuxprometheus.Options{})))
}

// Two Clients' Collectors register together when their ConstLabels
// differ, and not when they are the same.
func TestCollectorsOfTwoClients(t *testing.T) {
	addresses := addressesOf(redistest.StartN(t, 1, redistest.Options{}))
	first, second := newClient(t, addresses), newClient(t, addresses)
	registry := prometheus.NewRegistry()
	require.NoError(t, registry.Register(lockmuxprometheus.NewCollector(first, lockmuxprometheus.Options{ConstLabels: prometheus.Labels{"client": "first"}})))
	require.NoError(t, registry.Register(lockmuxprometheus.NewCollector(second, lockmuxprometheus.Options{ConstLabels: prometheus.Labels{"client": "second"}})))
	assert.Error(t, registry.Register(lockmuxprometheus.NewCollector(second, lockmuxprometheus.Options{ConstLabels: prometheus.Labels{"client": "second"}})))
}

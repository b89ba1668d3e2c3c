package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// Stats counts what a Client did, for a service's metrics. The module
// github.com/lockmux/lockmux/contrib/prometheus exports them to
// Prometheus.
func ExampleClient_Stats() {
	addresses, stop := startNodes(3)
	defer stop()
	client, err := redlock.New(addresses, redlock.Options{})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	m := client.NewMutex("orders:1001", redlock.MutexOptions{})
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
	stats := client.Stats()
	fmt.Println("attempts:", stats.LockAttempts, "acquired:", stats.Acquired, "released:", stats.Released)
	fmt.Println("acquisitions timed:", stats.Acquire.Count)
	// Output:
	// attempts: 1 acquired: 1 released: 1
	// acquisitions timed: 1
}

// A Histogram counts durations in buckets that double from 16 µs; a
// quantile is the upper bound of the bucket that holds it. The histogram
// here is made up; a service takes it from Client.Stats.
func ExampleHistogram_Quantile() {
	var acquire redlock.Histogram
	// Ten acquisitions of 100 µs to 128 µs, two of about 1 ms.
	acquire.Buckets[3] = 10
	acquire.Buckets[6] = 2
	acquire.Count = 12
	acquire.Sum = 10*110*time.Microsecond + 2*900*time.Microsecond

	fmt.Println("bucket 3 ends at", redlock.HistogramBounds()[3])
	fmt.Println("p50", acquire.Quantile(0.5), "p99", acquire.Quantile(0.99), "mean", acquire.Mean())
	// Output:
	// bucket 3 ends at 128µs
	// p50 128µs p99 1.024ms mean 241.666µs
}

package redlock_test

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// writePrometheus writes stats in the Prometheus text exposition format,
// without any metrics dependency. A service would call it from its /metrics
// handler with the value of Client.Stats.
func writePrometheus(w io.Writer, stats redlock.Stats) {
	counters := []struct {
		name  string
		value uint64
	}{
		{"lockmux_lock_attempts_total", stats.LockAttempts},
		{"lockmux_acquired_total", stats.Acquired},
		{"lockmux_not_acquired_total", stats.NotAcquired},
		{"lockmux_released_total", stats.Released},
		{"lockmux_release_lost_total", stats.ReleaseLost},
		{"lockmux_extended_total", stats.Extended},
		{"lockmux_extend_failed_total", stats.ExtendFailed},
		{"lockmux_lost_total", stats.Lost},
		{"lockmux_node_errors_total", stats.NodeErrors},
		{"lockmux_node_timeouts_total", stats.NodeTimeouts},
	}
	for _, counter := range counters {
		fmt.Fprintf(w, "# TYPE %s counter\n%s %d\n", counter.name, counter.name, counter.value)
	}
	writeHistogram(w, "lockmux_acquire_seconds", stats.Acquire)
	writeHistogram(w, "lockmux_release_seconds", stats.Release)
	writeHistogram(w, "lockmux_extend_seconds", stats.Extend)
}

// writeHistogram writes one histogram with cumulative buckets. To keep the
// output short it writes every second bound (16 µs, 64 µs, 256 µs, … 16.8 s,
// each four times the one before); the set of bounds must stay the same from
// one scrape to the next, so empty buckets are written too.
func writeHistogram(w io.Writer, name string, histogram redlock.Histogram) {
	fmt.Fprintf(w, "# TYPE %s histogram\n", name)
	bounds := redlock.HistogramBounds()
	var cumulative uint64
	for i, count := range histogram.Buckets[:redlock.HistogramBuckets-1] {
		cumulative += count
		if i%2 == 1 {
			continue
		}
		le := strconv.FormatFloat(bounds[i].Seconds(), 'g', -1, 64)
		fmt.Fprintf(w, "%s_bucket{le=%q} %d\n", name, le, cumulative)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, histogram.Count)
	fmt.Fprintf(w, "%s_sum %s\n", name, strconv.FormatFloat(histogram.Sum.Seconds(), 'g', -1, 64))
	fmt.Fprintf(w, "%s_count %d\n", name, histogram.Count)
}

// This example exports Stats in the Prometheus text format by hand. The
// Stats here are made up; a service takes them from Client.Stats.
func ExampleStats() {
	var stats redlock.Stats
	stats.LockAttempts, stats.Acquired, stats.NotAcquired = 12, 10, 2
	stats.Released = 10
	stats.NodeErrors, stats.NodeTimeouts = 1, 1
	// Ten acquisitions of 100 µs to 128 µs, two of about 1 ms.
	stats.Acquire.Buckets[3] = 10
	stats.Acquire.Buckets[6] = 2
	stats.Acquire.Count = 12
	stats.Acquire.Sum = 10*110*time.Microsecond + 2*900*time.Microsecond

	writePrometheus(os.Stdout, stats)
	fmt.Println("# p99", stats.Acquire.Quantile(0.99), "mean", stats.Acquire.Mean())
	// Output:
	// # TYPE lockmux_lock_attempts_total counter
	// lockmux_lock_attempts_total 12
	// # TYPE lockmux_acquired_total counter
	// lockmux_acquired_total 10
	// # TYPE lockmux_not_acquired_total counter
	// lockmux_not_acquired_total 2
	// # TYPE lockmux_released_total counter
	// lockmux_released_total 10
	// # TYPE lockmux_release_lost_total counter
	// lockmux_release_lost_total 0
	// # TYPE lockmux_extended_total counter
	// lockmux_extended_total 0
	// # TYPE lockmux_extend_failed_total counter
	// lockmux_extend_failed_total 0
	// # TYPE lockmux_lost_total counter
	// lockmux_lost_total 0
	// # TYPE lockmux_node_errors_total counter
	// lockmux_node_errors_total 1
	// # TYPE lockmux_node_timeouts_total counter
	// lockmux_node_timeouts_total 1
	// # TYPE lockmux_acquire_seconds histogram
	// lockmux_acquire_seconds_bucket{le="1.6e-05"} 0
	// lockmux_acquire_seconds_bucket{le="6.4e-05"} 0
	// lockmux_acquire_seconds_bucket{le="0.000256"} 10
	// lockmux_acquire_seconds_bucket{le="0.001024"} 12
	// lockmux_acquire_seconds_bucket{le="0.004096"} 12
	// lockmux_acquire_seconds_bucket{le="0.016384"} 12
	// lockmux_acquire_seconds_bucket{le="0.065536"} 12
	// lockmux_acquire_seconds_bucket{le="0.262144"} 12
	// lockmux_acquire_seconds_bucket{le="1.048576"} 12
	// lockmux_acquire_seconds_bucket{le="4.194304"} 12
	// lockmux_acquire_seconds_bucket{le="16.777216"} 12
	// lockmux_acquire_seconds_bucket{le="+Inf"} 12
	// lockmux_acquire_seconds_sum 0.0029
	// lockmux_acquire_seconds_count 12
	// # TYPE lockmux_release_seconds histogram
	// lockmux_release_seconds_bucket{le="1.6e-05"} 0
	// lockmux_release_seconds_bucket{le="6.4e-05"} 0
	// lockmux_release_seconds_bucket{le="0.000256"} 0
	// lockmux_release_seconds_bucket{le="0.001024"} 0
	// lockmux_release_seconds_bucket{le="0.004096"} 0
	// lockmux_release_seconds_bucket{le="0.016384"} 0
	// lockmux_release_seconds_bucket{le="0.065536"} 0
	// lockmux_release_seconds_bucket{le="0.262144"} 0
	// lockmux_release_seconds_bucket{le="1.048576"} 0
	// lockmux_release_seconds_bucket{le="4.194304"} 0
	// lockmux_release_seconds_bucket{le="16.777216"} 0
	// lockmux_release_seconds_bucket{le="+Inf"} 0
	// lockmux_release_seconds_sum 0
	// lockmux_release_seconds_count 0
	// # TYPE lockmux_extend_seconds histogram
	// lockmux_extend_seconds_bucket{le="1.6e-05"} 0
	// lockmux_extend_seconds_bucket{le="6.4e-05"} 0
	// lockmux_extend_seconds_bucket{le="0.000256"} 0
	// lockmux_extend_seconds_bucket{le="0.001024"} 0
	// lockmux_extend_seconds_bucket{le="0.004096"} 0
	// lockmux_extend_seconds_bucket{le="0.016384"} 0
	// lockmux_extend_seconds_bucket{le="0.065536"} 0
	// lockmux_extend_seconds_bucket{le="0.262144"} 0
	// lockmux_extend_seconds_bucket{le="1.048576"} 0
	// lockmux_extend_seconds_bucket{le="4.194304"} 0
	// lockmux_extend_seconds_bucket{le="16.777216"} 0
	// lockmux_extend_seconds_bucket{le="+Inf"} 0
	// lockmux_extend_seconds_sum 0
	// lockmux_extend_seconds_count 0
	// # p99 1.024ms mean 241.666µs
}

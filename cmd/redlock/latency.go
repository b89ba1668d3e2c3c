package main

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// The layout of latencyHistogram: durations below subBuckets nanoseconds
// have a bucket each; above, every power of two is split into subBuckets
// buckets of equal width, so that a bucket is at most 1/subBuckets (about
// 3 %) of its values wide.
const (
	subBucketBits    = 5
	subBuckets       = 1 << subBucketBits
	largestExponent  = 40 // durations are counted up to 2^41 ns, about 37 minutes
	histogramBuckets = (largestExponent - subBucketBits + 2) * subBuckets
)

// latencyHistogram counts durations. It is safe for concurrent use: every
// counter is atomic, so workers record without a lock and a progress line
// can read percentiles while they run.
type latencyHistogram struct {
	buckets [histogramBuckets]atomic.Uint64
	count   atomic.Uint64
	sum     atomic.Int64
	maximum atomic.Int64
}

// record counts one duration.
func (h *latencyHistogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.buckets[bucketOf(uint64(d))].Add(1)
	h.count.Add(1)
	h.sum.Add(int64(d))
	for {
		current := h.maximum.Load()
		if int64(d) <= current || h.maximum.CompareAndSwap(current, int64(d)) {
			return
		}
	}
}

// bucketOf returns the bucket of a duration in nanoseconds.
func bucketOf(nanoseconds uint64) int {
	if nanoseconds < subBuckets {
		return int(nanoseconds)
	}
	exponent := bits.Len64(nanoseconds) - subBucketBits - 1
	if exponent > largestExponent-subBucketBits {
		return histogramBuckets - 1
	}
	return (exponent+1)*subBuckets + int(nanoseconds>>exponent) - subBuckets
}

// bucketMiddle returns the middle of a bucket's range, in nanoseconds.
func bucketMiddle(bucket int) uint64 {
	if bucket < subBuckets {
		return uint64(bucket)
	}
	exponent := bucket/subBuckets - 1
	lower := uint64(bucket%subBuckets+subBuckets) << exponent
	return lower + (uint64(1)<<exponent)/2
}

// latencySummary is what a report shows of a histogram.
type latencySummary struct {
	Count                        uint64
	Mean, P50, P90, P99, Maximum time.Duration
}

// summary returns the count, mean, percentiles and maximum.
func (h *latencyHistogram) summary() latencySummary {
	var counts [histogramBuckets]uint64
	var total uint64
	for i := range counts {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	s := latencySummary{Count: total, Maximum: time.Duration(h.maximum.Load())}
	if total == 0 {
		return s
	}
	s.Mean = time.Duration(h.sum.Load() / int64(h.count.Load()))
	percentile := func(fraction float64) time.Duration {
		rank := uint64(fraction*float64(total-1)) + 1 // the rank-th smallest, from 1
		var seen uint64
		for i, count := range counts {
			seen += count
			if seen >= rank {
				return min(time.Duration(bucketMiddle(i)), s.Maximum)
			}
		}
		return s.Maximum
	}
	s.P50, s.P90, s.P99 = percentile(0.50), percentile(0.90), percentile(0.99)
	return s
}

// String returns the summary on one line.
func (s latencySummary) String() string {
	return "p50 " + shortDuration(s.P50) + "  p90 " + shortDuration(s.P90) +
		"  p99 " + shortDuration(s.P99) + "  max " + shortDuration(s.Maximum)
}

// shortDuration rounds a duration to three significant digits or so.
func shortDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= 10*time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

package latency

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// FirstBound is the upper bound of level 0, [0, FirstBound]; level k above
// it holds the durations in (FirstBound·2^(k−1), FirstBound·2^k].
const FirstBound = 16 * time.Microsecond

// The layout of a Histogram. Level 0 is split as a power-of-two layout
// of subBuckets buckets per power (a bucket of each duration below
// subBuckets ns), cut at FirstBound: lowBuckets buckets. Each level above
// it has subBuckets buckets of equal width, the last bucket also counting
// every duration above the last level. A bucket is at most 1/subBuckets
// (about 3 %) of its durations wide.
const (
	subBucketBits = 5
	subBuckets    = 1 << subBucketBits
	levels        = 28 // up to FirstBound·2^27, about 36 minutes
)

const (
	lowBuckets  = 319 // lowBucketOf(FirstBound) + 1, as a test checks
	bucketCount = lowBuckets + (levels-1)*subBuckets
)

// Histogram counts durations. Its zero value is ready, and it is safe for
// concurrent use.
type Histogram struct {
	buckets [bucketCount]atomic.Uint64
	sum     atomic.Int64
	maximum atomic.Int64
}

// Record counts one duration; a negative one counts as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.buckets[bucketOf(d)].Add(1)
	h.sum.Add(int64(d))
	for {
		current := h.maximum.Load()
		if int64(d) <= current || h.maximum.CompareAndSwap(current, int64(d)) {
			return
		}
	}
}

// Level returns the level of d: 0 for d ≤ FirstBound, otherwise the
// smallest k with d ≤ FirstBound·2^k. It has no upper limit.
func Level(d time.Duration) int {
	if d <= FirstBound {
		return 0
	}
	// The bit length of ⌈d/FirstBound⌉ − 1.
	units := (uint64(d) + uint64(FirstBound) - 1) / uint64(FirstBound)
	return bits.Len64(units - 1)
}

// levelRange returns the lower bound (excluded) of a level above 0 and
// the width of its buckets, in nanoseconds.
func levelRange(level int) (lower, width uint64) {
	lower = uint64(FirstBound) << (level - 1)
	return lower, lower / subBuckets
}

// bucketOf returns the bucket that counts d, which is not negative.
func bucketOf(d time.Duration) int {
	level := Level(d)
	switch {
	case level == 0:
		return lowBucketOf(uint64(d))
	case level >= levels:
		return bucketCount - 1
	}
	lower, width := levelRange(level)
	return lowBuckets + (level-1)*subBuckets + int((uint64(d)-lower-1)/width)
}

// lowBucketOf returns the bucket of a duration of level 0, in nanoseconds.
func lowBucketOf(nanoseconds uint64) int {
	if nanoseconds < subBuckets {
		return int(nanoseconds)
	}
	exponent := bits.Len64(nanoseconds) - subBucketBits - 1
	return (exponent+1)*subBuckets + int(nanoseconds>>exponent) - subBuckets
}

// levelOf returns the level of a bucket.
func levelOf(bucket int) int {
	if bucket < lowBuckets {
		return 0
	}
	return 1 + (bucket-lowBuckets)/subBuckets
}

// bucketMiddle returns the middle of a bucket's range, in nanoseconds.
func bucketMiddle(bucket int) uint64 {
	if bucket < subBuckets {
		return uint64(bucket)
	}
	if bucket < lowBuckets {
		exponent := bucket/subBuckets - 1
		lower := uint64(bucket%subBuckets+subBuckets) << exponent
		return lower + (uint64(1)<<exponent)/2
	}
	lower, width := levelRange(levelOf(bucket))
	return lower + uint64((bucket-lowBuckets)%subBuckets)*width + width/2
}

// Levels adds the count of each level to counts[level], the levels from
// len(counts)−1 up counted in its last element, and returns the sum of
// the durations recorded: redlock.Histogram's buckets are the levels.
func (h *Histogram) Levels(counts []uint64) (sum time.Duration) {
	for i := range h.buckets {
		if n := h.buckets[i].Load(); n != 0 {
			counts[min(levelOf(i), len(counts)-1)] += n
		}
	}
	return time.Duration(h.sum.Load())
}

// Summary is what a report shows of a Histogram. The percentiles are the
// middles of their buckets, at most Maximum; Maximum is exact.
type Summary struct {
	Count                        uint64
	Mean, P50, P90, P99, Maximum time.Duration
}

// Summary returns the count, mean, percentiles and maximum.
func (h *Histogram) Summary() Summary {
	var counts [bucketCount]uint64
	var total uint64
	for i := range counts {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	s := Summary{Count: total, Maximum: time.Duration(h.maximum.Load())}
	if total == 0 {
		return s
	}
	s.Mean = time.Duration(h.sum.Load() / int64(total))
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
func (s Summary) String() string {
	return "p50 " + ShortDuration(s.P50) + "  p90 " + ShortDuration(s.P90) +
		"  p99 " + ShortDuration(s.P99) + "  max " + ShortDuration(s.Maximum)
}

// ShortDuration rounds a duration to three significant digits or so.
func ShortDuration(d time.Duration) string {
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

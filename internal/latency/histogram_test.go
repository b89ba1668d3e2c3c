package latency

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLatencyHistogram(t *testing.T) {
	var histogram Histogram
	for i := 1; i <= 1000; i++ {
		histogram.Record(time.Duration(i) * time.Microsecond)
	}
	summary := histogram.Summary()
	assert.Equal(t, uint64(1000), summary.Count)
	assert.Equal(t, time.Millisecond, summary.Maximum)
	assert.InEpsilon(t, 500*time.Microsecond, summary.P50, 0.04)
	assert.InEpsilon(t, 900*time.Microsecond, summary.P90, 0.04)
	assert.InEpsilon(t, 990*time.Microsecond, summary.P99, 0.04)
	assert.InEpsilon(t, 500500*time.Nanosecond, summary.Mean, 0.001)

	assert.Zero(t, (&Histogram{}).Summary().P99, "an empty histogram")
	for _, d := range []time.Duration{0, 1, 31, 32, 33, 1000, time.Second, time.Hour} {
		middle := time.Duration(bucketMiddle(bucketOf(d)))
		if d < time.Hour && d > 0 {
			assert.InEpsilon(t, d, middle, 0.04, "%v", d)
		}
	}
}

// The buckets of level 0 end at FirstBound, and each bucket lies within
// one level: the levels are exactly redlock's doubling buckets.
func TestLayout(t *testing.T) {
	require.Equal(t, lowBucketOf(uint64(FirstBound))+1, lowBuckets)
	assert.Equal(t, lowBuckets-1, bucketOf(FirstBound))
	assert.Equal(t, lowBuckets, bucketOf(FirstBound+1))
	assert.Equal(t, bucketCount-1, bucketOf(math.MaxInt64))
	previous := 0
	check := func(d time.Duration) {
		bucket := bucketOf(d)
		require.GreaterOrEqual(t, bucket, previous, "%v: buckets grow with durations", d)
		require.Equal(t, min(Level(d), levels-1), levelOf(bucket), "%v: bucket %d", d, bucket)
		if Level(d) < levels {
			require.InEpsilon(t, float64(max(d, 1)), float64(max(bucketMiddle(bucket), 1)), 1.0/subBuckets+0.001, "%v", d)
		}
		previous = bucket
	}
	for level := range levels + 1 {
		bound := FirstBound << level
		for _, d := range []time.Duration{bound - 1, bound, bound + 1} {
			check(d)
		}
	}
	previous = 0
	for d := time.Duration(0); d < 100*time.Millisecond; d += d/64 + 1 {
		check(d)
	}
}

func TestLevels(t *testing.T) {
	var histogram Histogram
	histogram.Record(-time.Second)
	histogram.Record(FirstBound)
	histogram.Record(FirstBound + 1)
	histogram.Record(4 * FirstBound)
	histogram.Record(time.Hour)
	var counts [22]uint64
	sum := histogram.Levels(counts[:])
	assert.Equal(t, [22]uint64{0: 2, 1: 1, 2: 1, 21: 1}, counts)
	assert.Equal(t, 2*FirstBound+1+4*FirstBound+time.Hour, sum)
}

func TestHistogramConcurrent(t *testing.T) {
	var histogram Histogram
	var group sync.WaitGroup
	for worker := range 4 {
		group.Go(func() {
			for i := range 1000 {
				histogram.Record(time.Duration(worker*1000+i) * time.Microsecond)
			}
		})
	}
	group.Wait()
	summary := histogram.Summary()
	assert.Equal(t, uint64(4000), summary.Count)
	assert.Equal(t, 3999*time.Microsecond, summary.Maximum)
}

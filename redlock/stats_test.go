package redlock

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHistogramBounds(t *testing.T) {
	bounds := HistogramBounds()
	assert.Equal(t, 16*time.Microsecond, bounds[0])
	assert.Equal(t, 32*time.Microsecond, bounds[1])
	assert.Equal(t, 16*time.Microsecond<<20, bounds[HistogramBuckets-2])
	assert.InDelta(t, 16.8, bounds[HistogramBuckets-2].Seconds(), 0.05)
	assert.Equal(t, time.Duration(math.MaxInt64), bounds[HistogramBuckets-1])
	for i := 1; i < HistogramBuckets; i++ {
		assert.Greater(t, bounds[i], bounds[i-1])
	}
}

func TestHistogramBucket(t *testing.T) {
	tests := []struct {
		name     string
		duration time.Duration
		want     int
	}{
		{name: "negative", duration: -time.Second, want: 0},
		{name: "zero", duration: 0, want: 0},
		{name: "first bound", duration: 16 * time.Microsecond, want: 0},
		{name: "just above the first bound", duration: 16*time.Microsecond + 1, want: 1},
		{name: "second bound", duration: 32 * time.Microsecond, want: 1},
		{name: "loopback round trip", duration: 64 * time.Microsecond, want: 2},
		{name: "between bounds", duration: 100 * time.Microsecond, want: 3},
		{name: "one millisecond", duration: time.Millisecond, want: 6},
		{name: "fifty milliseconds", duration: 50 * time.Millisecond, want: 12},
		{name: "ten seconds", duration: 10 * time.Second, want: 20},
		{name: "last finite bound", duration: 16 * time.Microsecond << 20, want: 20},
		{name: "beyond the last finite bound", duration: 16*time.Microsecond<<20 + 1, want: HistogramBuckets - 1},
		{name: "an hour", duration: time.Hour, want: HistogramBuckets - 1},
		{name: "largest duration", duration: math.MaxInt64, want: HistogramBuckets - 1},
	}
	bounds := HistogramBounds()
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			bucket := histogramBucket(test.duration)
			assert.Equal(t, test.want, bucket)
			// The bucket's bounds enclose the duration.
			assert.LessOrEqual(t, test.duration, bounds[bucket])
			if bucket > 0 {
				assert.Greater(t, test.duration, bounds[bucket-1])
			}
		})
	}
}

func TestHistogramBucketMatchesBounds(t *testing.T) {
	bounds := HistogramBounds()
	for d := time.Duration(0); d < 2*time.Second; d += 997 * time.Nanosecond {
		bucket := histogramBucket(d)
		if d > bounds[bucket] || bucket > 0 && d <= bounds[bucket-1] {
			t.Fatalf("duration %v placed in bucket %d (%v]", d, bucket, bounds[bucket])
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	var recorder histogramRecorder
	// 90 fast operations (≤ 64 µs), 9 of about 1 ms, 1 of a minute.
	for range 90 {
		recorder.record(50 * time.Microsecond)
	}
	for range 9 {
		recorder.record(900 * time.Microsecond)
	}
	recorder.record(time.Minute)
	histogram := recorder.snapshot()

	tests := []struct {
		name     string
		quantile float64
		want     time.Duration
	}{
		{name: "minimum", quantile: 0, want: 64 * time.Microsecond},
		{name: "median", quantile: 0.5, want: 64 * time.Microsecond},
		{name: "90th percentile", quantile: 0.9, want: 64 * time.Microsecond},
		{name: "91st percentile", quantile: 0.91, want: 1024 * time.Microsecond},
		{name: "99th percentile", quantile: 0.99, want: 1024 * time.Microsecond},
		{name: "maximum in the unbounded bucket", quantile: 1, want: 16 * time.Microsecond << 20},
		{name: "below zero", quantile: -1, want: 64 * time.Microsecond},
		{name: "above one", quantile: 2, want: 16 * time.Microsecond << 20},
		{name: "NaN", quantile: math.NaN(), want: 64 * time.Microsecond},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.Equal(t, test.want, histogram.Quantile(test.quantile))
		})
	}

	assert.Equal(t, uint64(100), histogram.Count)
	assert.Equal(t, 90*50*time.Microsecond+9*900*time.Microsecond+time.Minute, histogram.Sum)
	assert.Equal(t, histogram.Sum/100, histogram.Mean())
}

func TestHistogramEmpty(t *testing.T) {
	var histogram Histogram
	assert.Zero(t, histogram.Mean())
	assert.Zero(t, histogram.Quantile(0.5))
}

func TestStatsRecorder(t *testing.T) {
	var recorder statsRecorder
	recorder.recordAcquire(100*time.Microsecond, true)
	recorder.recordAcquire(200*time.Microsecond, false)
	recorder.recordAcquire(300*time.Microsecond, false)
	recorder.recordRelease(100*time.Microsecond, true)
	recorder.recordRelease(100*time.Microsecond, false)
	recorder.recordExtend(time.Millisecond, true)
	recorder.recordExtend(time.Millisecond, true)
	recorder.recordExtend(time.Millisecond, false)
	recorder.recordLost()
	recorder.recordNodeError(OutcomeTimeout)
	recorder.recordNodeError(OutcomeError)
	recorder.recordNodeError(OutcomeNotSent)

	stats := recorder.snapshot()
	assert.Equal(t, uint64(3), stats.LockAttempts)
	assert.Equal(t, uint64(1), stats.Acquired)
	assert.Equal(t, uint64(2), stats.NotAcquired)
	assert.Equal(t, uint64(1), stats.Released)
	assert.Equal(t, uint64(1), stats.ReleaseLost)
	assert.Equal(t, uint64(2), stats.Extended)
	assert.Equal(t, uint64(1), stats.ExtendFailed)
	assert.Equal(t, uint64(1), stats.Lost)
	assert.Equal(t, uint64(3), stats.NodeErrors)
	assert.Equal(t, uint64(1), stats.NodeTimeouts)
	assert.Equal(t, uint64(3), stats.Acquire.Count)
	assert.Equal(t, 600*time.Microsecond, stats.Acquire.Sum)
	assert.Equal(t, uint64(2), stats.Release.Count)
	assert.Equal(t, uint64(3), stats.Extend.Count)
	assert.Equal(t, uint64(3), stats.Extend.Buckets[histogramBucket(time.Millisecond)])
}

func TestStatsRecorderConcurrent(t *testing.T) {
	var recorder statsRecorder
	var group sync.WaitGroup
	for worker := range 8 {
		group.Go(func() {
			for i := range 1000 {
				recorder.recordAcquire(time.Duration(worker*1000+i)*time.Microsecond, i%2 == 0)
			}
		})
	}
	group.Wait()
	stats := recorder.snapshot()
	assert.Equal(t, uint64(8000), stats.LockAttempts)
	assert.Equal(t, uint64(4000), stats.Acquired)
	assert.Equal(t, uint64(8000), stats.Acquire.Count)
	// The sum of 0..7999 microseconds.
	assert.Equal(t, time.Duration(7999*8000/2)*time.Microsecond, stats.Acquire.Sum)
}

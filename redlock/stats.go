package redlock

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/lockmux/lockmux/internal/latency"
)

// HistogramBuckets is the number of buckets of a Histogram: 21 doubling
// from 16 µs to about 16.8 s, and one for longer durations.
const HistogramBuckets = 22

const histogramFirstBound = latency.FirstBound

// HistogramBounds returns each bucket's inclusive upper bound: 16 µs·2^i,
// and the largest Duration for the last bucket.
func HistogramBounds() [HistogramBuckets]time.Duration {
	var bounds [HistogramBuckets]time.Duration
	for i := range HistogramBuckets - 1 {
		bounds[i] = histogramFirstBound << i
	}
	bounds[HistogramBuckets-1] = math.MaxInt64
	return bounds
}

// histogramBucket returns the index of the bucket that counts d.
func histogramBucket(d time.Duration) int {
	return min(latency.Level(d), HistogramBuckets-1)
}

// Histogram is a latency distribution over fixed buckets (HistogramBounds).
type Histogram struct {
	// Count is the number of durations recorded: the sum of Buckets.
	Count uint64
	// Sum is the total of the durations recorded.
	Sum time.Duration
	// Buckets[i] is the number of durations that fell in bucket i.
	Buckets [HistogramBuckets]uint64
}

// Mean returns the mean duration, or zero when nothing was recorded.
func (h Histogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// Quantile returns the upper bound of the bucket holding the q-quantile,
// at most about 16.8 s, or zero when empty. q is clamped to [0, 1].
func (h Histogram) Quantile(q float64) time.Duration {
	var total uint64
	for _, count := range h.Buckets {
		total += count
	}
	if total == 0 {
		return 0
	}
	if !(q > 0) {
		q = 0
	}
	q = min(q, 1)
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i, count := range h.Buckets {
		seen += count
		if seen >= rank {
			return histogramFirstBound << min(i, HistogramBuckets-2)
		}
	}
	return histogramFirstBound << (HistogramBuckets - 2)
}

// Stats holds a Client's counters and latency histograms since New. Its
// fields are read one at a time, so they may disagree by the operations
// in flight.
type Stats struct {
	// LockAttempts counts acquisition attempts, Acquired and NotAcquired
	// their results.
	LockAttempts, Acquired, NotAcquired uint64
	// Released counts releases confirmed on a quorum, and ReleaseLost
	// releases that found the hold gone.
	Released, ReleaseLost uint64
	// Extended and ExtendFailed count extensions, explicit or automatic.
	Extended, ExtendFailed uint64
	// Lost counts holds that ended before their release.
	Lost uint64
	// NodeErrors counts node failures in rounds; NodeTimeouts the timeouts
	// among them.
	NodeErrors, NodeTimeouts uint64
	// Quarantined counts confirmations of quarantined nodes.
	Quarantined uint64
	// Acquire, Release and Extend are the latencies of those attempts.
	Acquire, Release, Extend Histogram
}

// histogramRecorder records durations into a Histogram's buckets. It is
// safe for concurrent use.
type histogramRecorder struct {
	latency latency.Histogram
}

// record adds d to the histogram. Negative durations count as zero.
func (h *histogramRecorder) record(d time.Duration) {
	h.latency.Record(d)
}

// snapshot returns the histogram's current counts.
func (h *histogramRecorder) snapshot() Histogram {
	var out Histogram
	out.Sum = h.latency.Levels(out.Buckets[:])
	for _, count := range out.Buckets {
		out.Count += count
	}
	return out
}

// statsRecorder collects a Client's Stats without allocating. It is safe
// for concurrent use; its zero value is ready.
type statsRecorder struct {
	lockAttempts atomic.Uint64
	acquired     atomic.Uint64
	notAcquired  atomic.Uint64
	released     atomic.Uint64
	releaseLost  atomic.Uint64
	extended     atomic.Uint64
	extendFailed atomic.Uint64
	lost         atomic.Uint64
	nodeErrors   atomic.Uint64
	nodeTimeouts atomic.Uint64
	quarantined  atomic.Uint64

	acquire histogramRecorder
	release histogramRecorder
	extend  histogramRecorder
}

// recordAcquire records an acquisition attempt that took elapsed.
func (s *statsRecorder) recordAcquire(elapsed time.Duration, acquired bool) {
	s.lockAttempts.Add(1)
	if acquired {
		s.acquired.Add(1)
	} else {
		s.notAcquired.Add(1)
	}
	s.acquire.record(elapsed)
}

// recordRelease records a release; released is false for a hold gone.
func (s *statsRecorder) recordRelease(elapsed time.Duration, released bool) {
	if released {
		s.released.Add(1)
	} else {
		s.releaseLost.Add(1)
	}
	s.release.record(elapsed)
}

// recordExtend records an extension attempt that took elapsed.
func (s *statsRecorder) recordExtend(elapsed time.Duration, extended bool) {
	if extended {
		s.extended.Add(1)
	} else {
		s.extendFailed.Add(1)
	}
	s.extend.record(elapsed)
}

// recordLost records a hold that ended before its release.
func (s *statsRecorder) recordLost() {
	s.lost.Add(1)
}

// recordNodeError records a node's failure with the given outcome.
func (s *statsRecorder) recordNodeError(outcome Outcome) {
	if outcome == OutcomeQuarantined {
		s.quarantined.Add(1) // the node answered: not a failure
		return
	}
	s.nodeErrors.Add(1)
	if outcome == OutcomeTimeout {
		s.nodeTimeouts.Add(1)
	}
}

// snapshot returns the current values of every counter and histogram.
func (s *statsRecorder) snapshot() Stats {
	return Stats{
		LockAttempts: s.lockAttempts.Load(),
		Acquired:     s.acquired.Load(),
		NotAcquired:  s.notAcquired.Load(),
		Released:     s.released.Load(),
		ReleaseLost:  s.releaseLost.Load(),
		Extended:     s.extended.Load(),
		ExtendFailed: s.extendFailed.Load(),
		Lost:         s.lost.Load(),
		NodeErrors:   s.nodeErrors.Load(),
		NodeTimeouts: s.nodeTimeouts.Load(),
		Quarantined:  s.quarantined.Load(),
		Acquire:      s.acquire.snapshot(),
		Release:      s.release.snapshot(),
		Extend:       s.extend.snapshot(),
	}
}

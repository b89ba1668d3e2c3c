package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The rhythm of BenchmarkHandoff's goroutines, and the longest a run may
// take before it is failed rather than left to hang.
const (
	handoffHold    = time.Millisecond
	handoffAway    = 2 * time.Millisecond
	handoffTimeout = 2 * time.Minute
)

// BenchmarkHandoff passes one key between 8 goroutines through the
// blocking lock, with the peer's default retry settings: each takes the
// lock, holds it 1 ms, unlocks, stays away 2 ms and locks again. An op is
// one acquisition. acq/s reports the acquisitions per second, gap-µs the
// mean time from an Unlock returning to the next Lock returning (negative
// when the next Lock returns first).
func BenchmarkHandoff(b *testing.B) {
	handoff(b, contendingGoroutines, handoffAway)
}

// BenchmarkHandoffPair is BenchmarkHandoff with 2 goroutines that lock
// again as soon as they unlock, as a worker and its standby do: a Lock
// that finds the key held waits for its release alone.
func BenchmarkHandoffPair(b *testing.B) {
	handoff(b, 2, 0)
}

// handoff passes one key between goroutines, each of which holds it
// handoffHold and stays away for away after its unlock.
func handoff(b *testing.B, goroutines int, away time.Duration) {
	blocking := func(p peer) bool { return p.blocking }
	forEachPeer(b, blocking, func(b *testing.B, l locker) {
		sessions := newSessions(b, l, goroutines, sameKey("bench:handoff"))
		ctx, cancel := context.WithTimeout(b.Context(), handoffTimeout)
		defer cancel()
		// Acquisition k happens at acquiredAt[k] and its unlock returns at
		// releasedAt[k], both measured from start. The lock orders the
		// acquisitions, so the gap before acquisition k is acquiredAt[k] −
		// releasedAt[k−1].
		acquiredAt := make([]time.Duration, b.N)
		releasedAt := make([]time.Duration, b.N)
		var acquisitions tickets
		acquisitions.reset(b.N)
		var acquired atomic.Int64 // the number of acquisitions so far
		failure := firstError{onSet: cancel}
		b.ReportAllocs()
		m := startMeter(b, len(sessions))
		start := time.Now()
		var group sync.WaitGroup
		for _, s := range sessions {
			group.Go(func() {
				blocking := s.(blockingSession)
				for acquisitions.take() {
					if err := blocking.lock(ctx); err != nil {
						failure.set(err)
						return
					}
					k := acquired.Add(1) - 1
					acquiredAt[k] = time.Since(start)
					time.Sleep(handoffHold)
					if err := blocking.unlock(ctx); err != nil {
						failure.set(err)
						return
					}
					releasedAt[k] = time.Since(start)
					time.Sleep(away)
				}
			})
		}
		group.Wait()
		m.stop(b)
		if err := failure.get(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acq/s")
		if b.N > 1 {
			var gaps time.Duration
			for k := 1; k < b.N; k++ {
				gaps += acquiredAt[k] - releasedAt[k-1]
			}
			b.ReportMetric(float64(gaps)/float64(time.Microsecond)/float64(b.N-1), "gap-µs")
		}
	})
}

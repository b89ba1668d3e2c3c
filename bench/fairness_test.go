package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockmux/lockmux/redlock"
)

// BenchmarkFairness passes one key between 8 goroutines of lockmux, as
// BenchmarkHandoff does (hold 1 ms, away 2 ms), with and without
// MutexOptions.Fair, and reports the waits of Lock: from its call to its
// return, at the 50th and 99th percentiles (p50-ms, p99-ms). A plain lock
// goes to whoever tries first after a release; a fair one to the first in
// line, so that no waiter waits much longer than the 7 others' turns. No
// Go peer offers a fair lock, nor a semaphore or a read/write lock across
// independent masters: go-redsync, bsm/redislock and rueidislock have none
// of them, so there is nothing of theirs to compare with here.
func BenchmarkFairness(b *testing.B) {
	addresses := nodeAddresses(b)
	for _, fair := range []bool{false, true} {
		name := "plain"
		if fair {
			name = "fair"
		}
		b.Run(name, func(b *testing.B) {
			flushAll(b, addresses)
			client, err := redlock.New(addresses, redlock.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(b.Context(), handoffTimeout)
			defer cancel()
			var acquisitions tickets
			acquisitions.reset(b.N)
			failure := firstError{onSet: cancel}
			var mu sync.Mutex
			var waits []time.Duration
			b.ReportAllocs()
			var group sync.WaitGroup
			for range contendingGoroutines {
				m := client.NewMutex("bench:fairness:"+name, redlock.MutexOptions{TTL: lockTTL, Fair: fair})
				group.Go(func() {
					var mine []time.Duration
					for acquisitions.take() {
						called := time.Now()
						if err := m.Lock(ctx); err != nil {
							failure.set(err)
							return
						}
						mine = append(mine, time.Since(called))
						time.Sleep(handoffHold)
						if err := m.Unlock(ctx); err != nil {
							failure.set(err)
							return
						}
						time.Sleep(handoffAway)
					}
					mu.Lock()
					waits = append(waits, mine...)
					mu.Unlock()
				})
			}
			group.Wait()
			if err := failure.get(); err != nil {
				b.Fatal(err)
			}
			slices.Sort(waits)
			b.ReportMetric(float64(percentile(waits, 0.50))/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(float64(percentile(waits, 0.99))/float64(time.Millisecond), "p99-ms")
		})
	}
}

// percentile returns the q-th quantile of sorted durations, 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

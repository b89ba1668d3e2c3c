package redlock

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/floor"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// BenchmarkHandoff measures a blocking handoff: 8 goroutines, each with its
// own Mutex on one key, hold it 1 ms, unlock, stay away 2 ms and lock
// again. It reports acquisitions per second and the mean gap from an
// unlock to the next acquisition, and, measured in the same run, the round
// trip of the floor client to all N nodes, against which the gap is judged
// (the target is at most 3 round trips at N = 5):
//
//	go test -run '^$' -bench Handoff -benchtime 3s ./redlock/
func BenchmarkHandoff(b *testing.B) {
	for _, n := range []int{1, 5} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			nodes := startCluster(b, n, redistest.Options{})
			client := nodes.client(b, Options{})
			roundTrip := floorRoundTrip(b, nodes.addresses)

			const goroutines = 8
			var acquisitions atomic.Int64
			var lastUnlock atomic.Int64 // UnixNano of the last unlock; 0 while held
			var gapTotal, gaps atomic.Int64
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wait sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range goroutines {
				wait.Go(func() {
					m := client.NewMutex("handoff", MutexOptions{})
					for ctx.Err() == nil {
						if err := m.Lock(ctx); err != nil {
							return
						}
						if unlocked := lastUnlock.Swap(0); unlocked != 0 {
							gapTotal.Add(time.Now().UnixNano() - unlocked)
							gaps.Add(1)
						}
						if acquisitions.Add(1) >= int64(b.N) {
							cancel()
						}
						time.Sleep(time.Millisecond) // the work
						m.Unlock(context.Background())
						lastUnlock.Store(time.Now().UnixNano())
						time.Sleep(2 * time.Millisecond) // away
					}
				})
			}
			wait.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(acquisitions.Load())/elapsed.Seconds(), "acq/s")
			if gaps.Load() > 0 {
				gap := time.Duration(gapTotal.Load() / gaps.Load())
				b.ReportMetric(float64(gap.Microseconds()), "gap-µs")
				b.ReportMetric(float64(gap)/float64(roundTrip), "gap/round-trip")
			}
			b.ReportMetric(float64(roundTrip.Microseconds()), "round-trip-µs")
		})
	}
}

// floorRoundTrip measures the floor client's round trip of SET NX PX to
// every node: the median of 200.
func floorRoundTrip(b *testing.B, addresses []string) time.Duration {
	client, err := floor.Dial(addresses)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	command := resp.AppendCommand(nil, "SET", "floor:round-trip", "token", "NX", "PX", "10000")
	durations := make([]time.Duration, 200)
	for i := range durations {
		start := time.Now()
		if err := client.RoundTrip(command); err != nil {
			b.Fatal(err)
		}
		durations[i] = time.Since(start)
	}
	for i := 1; i < len(durations); i++ {
		for j := i; j > 0 && durations[j] < durations[j-1]; j-- {
			durations[j], durations[j-1] = durations[j-1], durations[j]
		}
	}
	return durations[len(durations)/2]
}

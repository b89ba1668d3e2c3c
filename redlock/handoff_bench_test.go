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

// BenchmarkBlockingHandoff measures a lone waiter's blocking acquisition
// in steady state, for each kind of lock: the same goroutine locks the
// same key again and again, each time after a holder in another Client
// took it, and waits for its release. An op is one acquisition, with the
// holder's Lock and Unlock and the waiter's Unlock; allocs/op counts both
// Clients' allocations:
//
//	go test -run '^$' -bench BlockingHandoff -benchmem ./redlock/
func BenchmarkBlockingHandoff(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		nodes := startCluster(b, n, redistest.Options{})
		waiterClient, holderClient := nodes.client(b, Options{}), nodes.client(b, Options{})
		for _, c := range blockingCases(waiterClient, holderClient) {
			b.Run("N="+strconv.Itoa(n)+"/"+c.name, func(b *testing.B) {
				acquisition, stop := blockingHandoff(b.Context(), c)
				defer stop()
				acquisition()
				b.ReportAllocs()
				for b.Loop() {
					acquisition()
				}
			})
		}
	}
}

// blockingCase is one kind of lock whose blocking acquisition waits for
// another's release: lock and unlock are the waiter's, hold and release
// the holder's, and waiting reports whether the waiter listens for a
// release.
type blockingCase struct {
	name                        string
	lock, unlock, hold, release func(ctx context.Context) error
	waiting                     func() bool
}

// blockingCases returns the kinds of lock whose waits are pinned: the
// waiter's on waiterClient, the holder's on holderClient.
func blockingCases(waiterClient, holderClient *Client) []blockingCase {
	mutex := waiterClient.NewMutex("allocs:wait", MutexOptions{TTL: 10 * time.Second})
	mutexHolder := holderClient.NewMutex("allocs:wait", MutexOptions{TTL: 10 * time.Second})
	fair := waiterClient.NewMutex("allocs:wait:fair", MutexOptions{TTL: 10 * time.Second, Fair: true})
	fairHolder := holderClient.NewMutex("allocs:wait:fair", MutexOptions{TTL: 10 * time.Second, Fair: true})
	semaphore := waiterClient.NewSemaphore("allocs:wait:semaphore", 1, MutexOptions{TTL: 10 * time.Second})
	semaphoreHolder := holderClient.NewSemaphore("allocs:wait:semaphore", 1, MutexOptions{TTL: 10 * time.Second})
	var permit, held Permit
	writer := waiterClient.NewRWMutex("allocs:wait:rw", MutexOptions{TTL: 10 * time.Second})
	writerHolder := holderClient.NewRWMutex("allocs:wait:rw", MutexOptions{TTL: 10 * time.Second})
	return []blockingCase{
		{
			name: "Mutex", lock: mutex.Lock, unlock: mutex.Unlock,
			hold: mutexHolder.Lock, release: mutexHolder.Unlock,
			waiting: func() bool { return mutex.waiter().Listening() },
		},
		{
			name: "fair Mutex", lock: fair.Lock, unlock: fair.Unlock,
			hold: fairHolder.Lock, release: fairHolder.Unlock,
			waiting: func() bool { return fair.waiter().Listening() },
		},
		{
			name: "Semaphore",
			lock: func(ctx context.Context) (err error) {
				permit, err = semaphore.Acquire(ctx)
				return err
			},
			unlock: func(ctx context.Context) error { return permit.Release(ctx) },
			hold: func(ctx context.Context) (err error) {
				held, err = semaphoreHolder.Acquire(ctx)
				return err
			},
			release: func(ctx context.Context) error { return held.Release(ctx) },
			waiting: func() bool { return semaphore.waiter.waiter().Listening() },
		},
		{
			name: "RWMutex writer", lock: writer.Lock, unlock: writer.Unlock,
			hold: writerHolder.Lock, release: writerHolder.Unlock,
			waiting: func() bool { return writer.writer.waiter().Listening() },
		},
	}
}

// blockingHandoff returns one blocking acquisition of the case's lock that
// waits for the holder's release: a goroutine of its own takes the lock,
// and releases it once the waiter listens. It panics on an error, as
// AllocsPerRun takes a function without a testing.T; stop ends the
// holder's goroutine.
func blockingHandoff(ctx context.Context, c blockingCase) (acquisition func(), stop func()) {
	turn, held, released := make(chan struct{}), make(chan error), make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range turn {
			if err := c.hold(ctx); err != nil {
				held <- err
				return
			}
			held <- nil
			waitUntil(c.waiting) // without it, the waiter retries at its fallback
			released <- c.release(ctx)
		}
	}()
	acquisition = func() {
		turn <- struct{}{}
		if err := <-held; err != nil {
			panic(err)
		}
		if err := c.lock(ctx); err != nil {
			panic(err)
		}
		if err := <-released; err != nil {
			panic(err)
		}
		if err := c.unlock(ctx); err != nil {
			panic(err)
		}
	}
	stop = func() {
		close(turn)
		<-done
	}
	return acquisition, stop
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

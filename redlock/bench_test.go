package redlock

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/floor"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock/internal/protocol"
	"github.com/lockmux/lockmux/resp"
)

// The benchmarks below compare a Lock+Unlock cycle with the floor: a
// hand-written client that makes the same two multiplexed round trips (SET
// NX PX to all N nodes, then EVALSHA compare-and-delete to all N) over one
// connection per goroutine per node, with no allocation. Both run in one
// process against the same servers, so their ratio is meaningful on a noisy
// machine. lockmux runs with the default options (the quarantine on), and
// serial/quarantine-off without the quarantine:
//
//	go test -run '^$' -bench Cycle -benchmem ./redlock/

const concurrentCallers = 32

func BenchmarkCycle(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			nodes := startCluster(b, n, redistest.Options{})
			client := nodes.client(b, Options{})
			ctx := context.Background()
			b.Run("serial/lockmux", func(b *testing.B) {
				b.ReportAllocs()
				m := client.NewMutex("bench:serial", MutexOptions{})
				for b.Loop() {
					lockUnlock(m, ctx)
				}
			})
			b.Run("serial/quarantine-off", func(b *testing.B) {
				b.ReportAllocs()
				m := nodes.client(b, Options{Quarantine: QuarantineOff}).NewMutex("bench:serial:off", MutexOptions{})
				for b.Loop() {
					lockUnlock(m, ctx)
				}
			})
			b.Run("serial/floor", func(b *testing.B) {
				b.ReportAllocs()
				cycle := newFloorCycle(b, nodes.addresses, "bench:floor:serial")
				for b.Loop() {
					cycle.run()
				}
			})
			b.Run("parallel/lockmux", func(b *testing.B) {
				b.ReportAllocs()
				var next atomic.Int64
				b.SetParallelism(parallelism())
				b.RunParallel(func(pb *testing.PB) {
					m := client.NewMutex("bench:parallel:"+strconv.FormatInt(next.Add(1), 10), MutexOptions{})
					for pb.Next() {
						lockUnlock(m, ctx)
					}
				})
			})
			b.Run("parallel/quarantine-off", func(b *testing.B) {
				b.ReportAllocs()
				off := nodes.client(b, Options{Quarantine: QuarantineOff})
				var next atomic.Int64
				b.SetParallelism(parallelism())
				b.RunParallel(func(pb *testing.PB) {
					m := off.NewMutex("bench:parallel:off:"+strconv.FormatInt(next.Add(1), 10), MutexOptions{})
					for pb.Next() {
						lockUnlock(m, ctx)
					}
				})
			})
			b.Run("parallel/floor", func(b *testing.B) {
				b.ReportAllocs()
				cycles := make(chan *floorCycle, parallelism()*runtime.GOMAXPROCS(0))
				for i := range cap(cycles) {
					cycles <- newFloorCycle(b, nodes.addresses, "bench:floor:parallel:"+strconv.Itoa(i))
				}
				b.SetParallelism(parallelism())
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					cycle := <-cycles
					for pb.Next() {
						cycle.run()
					}
				})
			})
		})
	}
}

func lockUnlock(m *Mutex, ctx context.Context) {
	if err := m.Lock(ctx); err != nil {
		panic(err)
	}
	if err := m.Unlock(ctx); err != nil {
		panic(err)
	}
}

// parallelism makes RunParallel start concurrentCallers goroutines.
func parallelism() int {
	return (concurrentCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
}

// floorCycle is one goroutine's floor client with its two commands.
type floorCycle struct {
	client        *floor.Client
	lock, release []byte
}

func newFloorCycle(b *testing.B, addresses []string, key string) *floorCycle {
	client, err := floor.Dial(addresses)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	if err := client.RoundTrip(resp.AppendCommand(nil, "SCRIPT", "LOAD", protocol.Release.Source())); err != nil {
		b.Fatal(err)
	}
	token := "0123456789abcdef0123456789abcdef01234567"
	return &floorCycle{
		client:  client,
		lock:    resp.AppendCommand(nil, "SET", key, token, "NX", "PX", "10000"),
		release: resp.AppendCommand(nil, "EVALSHA", protocol.Release.SHA(), "1", key, token, "0123456789abcdef"), // announced, as Unlock's
	}
}

func (c *floorCycle) run() {
	if err := c.client.RoundTrip(c.lock); err != nil {
		panic(err)
	}
	for _, reply := range c.client.Replies {
		if reply != '+' {
			panic("floor: lock not acquired")
		}
	}
	if err := c.client.RoundTrip(c.release); err != nil {
		panic(err)
	}
}

// BenchmarkSemaphoreCycle measures an uncontended Acquire+Release of a
// Semaphore's permit against a Mutex's Lock+Unlock on the same nodes: one
// round each way, as for a Mutex; and nearly-full, the same cycle with
// seven of eight permits held by another client: one round over every
// slot to win the one free.
func BenchmarkSemaphoreCycle(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			nodes := startCluster(b, n, redistest.Options{})
			client := nodes.client(b, Options{})
			ctx := context.Background()
			b.Run("semaphore", func(b *testing.B) {
				b.ReportAllocs()
				semaphore := client.NewSemaphore("bench:semaphore", 4, MutexOptions{})
				for b.Loop() {
					permit, err := semaphore.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if err := permit.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("nearly-full", func(b *testing.B) {
				// Seven of eight permits held by another client: the Acquire
				// finds the one free slot.
				b.ReportAllocs()
				semaphore := client.NewSemaphore("bench:semaphore:nearly-full", 8, MutexOptions{TTL: 10 * time.Second})
				other := nodes.client(b, Options{}).NewSemaphore("bench:semaphore:nearly-full", 8, MutexOptions{TTL: 10 * time.Second})
				for range 7 {
					permit, err := other.TryAcquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					defer permit.Release(ctx)
				}
				for b.Loop() {
					permit, err := semaphore.Acquire(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if err := permit.Release(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("mutex", func(b *testing.B) {
				b.ReportAllocs()
				m := client.NewMutex("bench:semaphore:mutex", MutexOptions{})
				for b.Loop() {
					lockUnlock(m, ctx)
				}
			})
		})
	}
}

// BenchmarkRWMutexCycle measures the uncontended cycles of a read/write
// lock, RLock+RUnlock and Lock+Unlock, against a Mutex's Lock+Unlock on
// the same nodes: one round each way, with scripts for both.
func BenchmarkRWMutexCycle(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			client := startCluster(b, n, redistest.Options{}).client(b, Options{})
			ctx := context.Background()
			rw := client.NewRWMutex("bench:rw", MutexOptions{})
			b.Run("read", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := rw.RLock(ctx); err != nil {
						b.Fatal(err)
					}
					if err := rw.RUnlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("write", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := rw.Lock(ctx); err != nil {
						b.Fatal(err)
					}
					if err := rw.Unlock(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("mutex", func(b *testing.B) {
				b.ReportAllocs()
				m := client.NewMutex("bench:rw:mutex", MutexOptions{})
				for b.Loop() {
					lockUnlock(m, ctx)
				}
			})
		})
	}
}

// BenchmarkFairLockCycle measures an uncontended Lock+Unlock of a fair
// lock against a plain one on the same nodes: a script instead of SET NX
// for the acquisition, one round each way for both.
func BenchmarkFairLockCycle(b *testing.B) {
	for _, n := range []int{1, 3, 5} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			client := startCluster(b, n, redistest.Options{}).client(b, Options{})
			ctx := context.Background()
			for _, fair := range []bool{true, false} {
				name := "plain"
				if fair {
					name = "fair"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					m := client.NewMutex("bench:fair:"+name, MutexOptions{Fair: fair})
					for b.Loop() {
						lockUnlock(m, ctx)
					}
				})
			}
		})
	}
}

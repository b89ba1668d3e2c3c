package bench

import (
	"sync"
	"sync/atomic"
	"testing"
)

// contendingGoroutines is how many goroutines BenchmarkContention and
// BenchmarkHandoff run on their one key.
const contendingGoroutines = 8

// BenchmarkContention makes single lock attempts on one key from 8
// goroutines. An op is one attempt, followed by an unlock when it acquired
// the lock; acq/s reports the acquisitions per second.
func BenchmarkContention(b *testing.B) {
	forEachPeer(b, nil, func(b *testing.B, l locker) {
		sessions := newSessions(b, l, contendingGoroutines, sameKey("bench:contention"))
		var attempts tickets
		attempts.reset(b.N)
		var acquisitions atomic.Int64
		var failure firstError
		ctx := b.Context()
		b.ReportAllocs()
		m := startMeter(b, len(sessions))
		var group sync.WaitGroup
		for _, s := range sessions {
			group.Go(func() {
				for attempts.take() {
					acquired, err := s.tryLock(ctx)
					if err == nil && acquired {
						acquisitions.Add(1)
						err = s.unlock(ctx)
					}
					if err != nil {
						failure.set(err)
						return
					}
				}
			})
		}
		group.Wait()
		m.stop(b)
		if err := failure.get(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(acquisitions.Load())/b.Elapsed().Seconds(), "acq/s")
	})
}

// tickets hands out a fixed number of ops to competing goroutines.
type tickets struct {
	left atomic.Int64
}

// reset makes n tickets available.
func (t *tickets) reset(n int) {
	t.left.Store(int64(n))
}

// take takes one ticket and reports whether there was one.
func (t *tickets) take() bool {
	return t.left.Add(-1) >= 0
}

// firstError keeps the first error that a group of goroutines sets, and
// calls onSet, if not nil, when it does.
type firstError struct {
	once  sync.Once
	err   error
	onSet func()
}

// set records err if no error was recorded before.
func (f *firstError) set(err error) {
	f.once.Do(func() {
		f.err = err
		if f.onSet != nil {
			f.onSet()
		}
	})
}

// get returns the recorded error. Call it after the goroutines are done.
func (f *firstError) get() error {
	return f.err
}

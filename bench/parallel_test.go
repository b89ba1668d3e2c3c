package bench

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// parallelGoroutines is how many goroutines BenchmarkParallel runs, each on
// a key of its own.
const parallelGoroutines = 32

// BenchmarkParallel locks and unlocks from 32 goroutines at once, each on
// its own key.
func BenchmarkParallel(b *testing.B) {
	forEachPeer(b, nil, func(b *testing.B, l locker) {
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		parallelism := (parallelGoroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
		goroutines := parallelism * runtime.GOMAXPROCS(0)
		sessions := newSessions(b, l, goroutines, func(i int) string {
			return fmt.Sprintf("bench:parallel:%d", i)
		})
		var next atomic.Int64
		var failure firstError
		ctx := b.Context()
		b.SetParallelism(parallelism)
		b.ReportAllocs()
		m := startMeter(b, goroutines)
		b.RunParallel(func(pb *testing.PB) {
			s := sessions[next.Add(1)-1]
			for pb.Next() {
				if err := cycle(ctx, s); err != nil {
					failure.set(err)
					return
				}
			}
		})
		m.stop(b)
		if err := failure.get(); err != nil {
			b.Fatal(err)
		}
	})
}

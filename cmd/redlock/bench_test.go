package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Counting a cycle allocates nothing: the load generator must not cost
// the client more than the lock it measures.
func TestBenchCycleBookkeepingDoesNotAllocate(t *testing.T) {
	counters := &benchCounters{}
	start := time.Now()
	allocations := testing.AllocsPerRun(100, func() {
		counters.cycleDone(start, start.Add(120*time.Microsecond), start.Add(250*time.Microsecond))
	})
	assert.Zero(t, allocations)
	assert.Equal(t, uint64(101), counters.cycles.Load())
	assert.Equal(t, uint64(101), counters.cycle.Summary().Count)
}

// BenchmarkBenchCycleOverhead measures what a worker of bench adds to a
// Lock+Unlock cycle: three clock readings and the counting, then those
// with the acquisition's timeout context. Compare it with redlock's
// BenchmarkCycle:
//
//	go test -run '^$' -bench BenchCycleOverhead -benchmem ./cmd/redlock/
func BenchmarkBenchCycleOverhead(b *testing.B) {
	calls := context.WithoutCancel(b.Context())
	for _, timeout := range []bool{false, true} {
		name := "counting"
		if timeout {
			name = "counting+lock-timeout"
		}
		b.Run(name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			counters := &benchCounters{}
			for b.Loop() {
				benchCycleOverhead(calls, counters, timeout)
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			counters := &benchCounters{}
			b.SetParallelism(128) // 256 workers on 2 cores, as --workers 256
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					benchCycleOverhead(calls, counters, timeout)
				}
			})
		})
	}
}

// benchCycleOverhead is benchWorker's cycle without its Lock and Unlock.
func benchCycleOverhead(calls context.Context, counters *benchCounters, timeout bool) {
	start := time.Now()
	if timeout {
		lockContext, cancelLock := context.WithTimeout(calls, benchLockTimeout)
		_ = lockContext.Done() // Lock asks for it
		cancelLock()
	}
	locked := time.Now()
	counters.cycleDone(start, locked, time.Now())
}

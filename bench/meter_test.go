package bench

import (
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// goroutinesCreatedMetric counts the goroutines created since the program
// started (runtime/metrics, Go 1.26).
const goroutinesCreatedMetric = "/sched/goroutines-created:goroutines"

// A meter measures what the testing package does not: the CPU time of the
// process and the goroutines created while a benchmark runs.
type meter struct {
	harnessGoroutines int // goroutines the benchmark itself starts
	cpuStart          time.Duration
	createdStart      uint64
	createdKnown      bool
}

// startMeter takes the starting values and resets b's timer. The benchmark
// itself will start harnessGoroutines goroutines, which are not counted.
func startMeter(b *testing.B, harnessGoroutines int) *meter {
	m := &meter{harnessGoroutines: harnessGoroutines}
	m.cpuStart = processCPU(b)
	m.createdStart, m.createdKnown = goroutinesCreated()
	b.ResetTimer()
	return m
}

// stop stops b's timer and reports cpu-ns/op and goroutines/op.
func (m *meter) stop(b *testing.B) {
	b.StopTimer()
	cpu := processCPU(b) - m.cpuStart
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if created, ok := goroutinesCreated(); ok && m.createdKnown {
		byClient := float64(created-m.createdStart) - float64(m.harnessGoroutines)
		b.ReportMetric(max(byClient, 0)/float64(b.N), "goroutines/op")
	}
}

// processCPU returns the user and system CPU time of the process so far.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// goroutinesCreated reads goroutinesCreatedMetric; false means the runtime
// does not have it.
func goroutinesCreated() (uint64, bool) {
	sample := []metrics.Sample{{Name: goroutinesCreatedMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	return sample[0].Value.Uint64(), true
}

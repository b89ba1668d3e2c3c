package mux_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockmux/lockmux/mux"
)

// BenchmarkTrackAll arms the keys of many holds at once on one node, as a
// renewer's batch does: one op is one TrackAll of the batch, and
// ns/arming is the time one hold's arming takes, and cpu-ns/arming the
// CPU it costs this process (the server is another): neither may grow
// with the size of the batch.
func BenchmarkTrackAll(b *testing.B) {
	for _, batch := range []int{10, 1000} {
		b.Run("batch="+strconv.Itoa(batch), func(b *testing.B) {
			group, servers := newGroup(b, 1)
			connected := make(chan int, 16)
			subscriber := group.Subscribe(mux.SubscribeOptions{
				OnConnect:    func(node int) { connected <- node },
				OnInvalidate: func(mux.Invalidation) {},
			})
			b.Cleanup(subscriber.Close)
			<-connected
			armings := make([]mux.Arming, batch)
			for i := range armings {
				key := "bench:track:" + strconv.Itoa(i)
				servers[0].Do(b, "SET", key, "token", "PX", "600000")
				armings[i] = mux.Arming{Request: mux.NewRequest("PTTL", key), Tag: uint64(i), Keys: []string{key}}
			}
			b.ReportAllocs()
			cpuBefore := processCPU(b)
			for b.Loop() {
				subscriber.TrackAll(context.Background(), 0, armings)
				for i := range armings {
					if armings[i].Err != nil {
						b.Fatal(armings[i].Err)
					}
				}
			}
			cpu := processCPU(b) - cpuBefore
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/arming")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/arming")
		})
	}
}

// processCPU returns the CPU time (user and system) of this process.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

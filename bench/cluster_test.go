package bench

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/redlock"
)

// clusterGoroutines is how many goroutines BenchmarkClusterMember runs,
// each on a key of its own.
const clusterGoroutines = 256

// BenchmarkClusterMember locks and unlocks from 256 goroutines at once,
// each on its own key, with lockmux over one member: a plain redis-server,
// then a Redis Cluster of three masters (the single-instance lock on each,
// quarantine on, nodes trusted). A cluster spreads the keys over three
// server processes; on a machine with few cores they share the cores that
// one process had, so the curve shows what routing costs more than what
// sharding gains (see docs/performance.md).
func BenchmarkClusterMember(b *testing.B) {
	if !redistest.Available() {
		b.Skip("redis-server is not installed")
	}
	members := []struct {
		name    string
		address func(b *testing.B) string
	}{
		{"plain", func(b *testing.B) string { return redistest.Start(b, redistest.Options{}).Addr() }},
		{"cluster-3", func(b *testing.B) string { return redistest.StartCluster(b, 3, false, redistest.Options{}).Address() }},
	}
	for _, member := range members {
		b.Run("member="+member.name, func(b *testing.B) {
			client, err := redlock.New([]string{member.address(b)}, redlock.Options{MaxTTL: lockTTL})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(b.Context(), 10*time.Second)
			defer cancel()
			if err := client.TrustNodes(ctx); err != nil {
				b.Fatal(err)
			}
			parallelism := (clusterGoroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
			mutexes := make([]*redlock.Mutex, parallelism*runtime.GOMAXPROCS(0))
			for i := range mutexes {
				mutexes[i] = client.NewMutex("bench:cluster:"+strconv.Itoa(i), redlock.MutexOptions{TTL: lockTTL})
				if err := mutexes[i].Lock(ctx); err != nil { // dials, loads the scripts
					b.Fatal(err)
				}
				if err := mutexes[i].Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			var failure firstError
			b.SetParallelism(parallelism)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				m := mutexes[next.Add(1)-1]
				for pb.Next() {
					if err := m.Lock(b.Context()); err != nil {
						failure.set(err)
						return
					}
					if err := m.Unlock(b.Context()); err != nil {
						failure.set(err)
						return
					}
				}
			})
			if err := failure.get(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

package mux_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmux/lockmux/internal/floor"
	"github.com/lockmux/lockmux/resp"
)

// The benchmarks below send SET key token NX PX ttl to N servers and gather
// the replies, through mux and through the floor client, in one run so that
// their ratio is meaningful on a noisy machine. Run them with
//
//	go test -run '^$' -bench . -benchmem ./mux/

const concurrentCallers = 32

var nodeCounts = []int{1, 3, 5}

func BenchmarkRoundTrip(b *testing.B) {
	for _, n := range nodeCounts {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			group, servers := newGroup(b, n)
			addresses := make([]string, n)
			for i, server := range servers {
				addresses[i] = server.Addr()
			}
			b.Run("serial/mux", func(b *testing.B) {
				b.ReportAllocs()
				round := group.NewRound()
				setNX(round, "bench:serial", "token")
				for b.Loop() {
					group.Send(round, time.Now().Add(time.Second))
					group.Wait(context.Background(), round, nil)
				}
			})
			b.Run("serial/floor", func(b *testing.B) {
				b.ReportAllocs()
				client, err := floor.Dial(addresses)
				if err != nil {
					b.Fatal(err)
				}
				defer client.Close()
				command := setNXCommand("bench:serial", "token")
				for b.Loop() {
					if err := client.RoundTrip(command); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("parallel/mux", func(b *testing.B) {
				b.ReportAllocs()
				var next atomic.Int64
				b.SetParallelism(parallelism())
				b.RunParallel(func(pb *testing.PB) {
					round := group.NewRound()
					setNX(round, "bench:parallel:"+strconv.FormatInt(next.Add(1), 10), "token")
					for pb.Next() {
						group.Send(round, time.Now().Add(time.Second))
						group.Wait(context.Background(), round, nil)
					}
				})
			})
			b.Run("parallel/floor", func(b *testing.B) {
				b.ReportAllocs()
				clients := make(chan *floor.Client, parallelism()*runtime.GOMAXPROCS(0))
				for range cap(clients) {
					client, err := floor.Dial(addresses)
					if err != nil {
						b.Fatal(err)
					}
					defer client.Close()
					clients <- client
				}
				var next atomic.Int64
				b.SetParallelism(parallelism())
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					client := <-clients
					command := setNXCommand("bench:parallel:"+strconv.FormatInt(next.Add(1), 10), "token")
					for pb.Next() {
						if err := client.RoundTrip(command); err != nil {
							panic(err)
						}
					}
				})
			})
		})
	}
}

// parallelism makes RunParallel start concurrentCallers goroutines.
func parallelism() int {
	return (concurrentCallers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0)
}

func setNXCommand(key, token string) []byte {
	command := resp.AppendArrayHeader(nil, 6)
	command = resp.AppendBulkString(command, "SET")
	command = resp.AppendBulkString(command, key)
	command = resp.AppendBulkString(command, token)
	command = resp.AppendBulkString(command, "NX")
	command = resp.AppendBulkString(command, "PX")
	return resp.AppendBulkInt(command, 10000)
}

package conn_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// BenchmarkDeepPipeline keeps depth calls in flight on one connection to a
// real server: each iteration waits for the oldest call's reply and sends
// the call again, so one iteration is one send and one reply. The time per
// iteration at depth 10,000 against depth 10 shows whether a send or a
// reply costs more as the pipeline deepens. The callers variants keep as
// many calls in flight with one goroutine each. Run it with
//
//	go test -run '^$' -bench DeepPipeline -benchmem ./conn/
func BenchmarkDeepPipeline(b *testing.B) {
	server := redistest.Start(b, redistest.Options{})
	for _, depth := range []int{10, 10_000} {
		b.Run("depth="+strconv.Itoa(depth), func(b *testing.B) {
			c := newConn(b, server.Addr(), conn.Options{})
			calls := make([]conn.Call, depth)
			for i := range calls {
				calls[i].Command = resp.AppendCommand(nil, "PING")
				c.Send(&calls[i], time.Now().Add(time.Minute))
			}
			b.ReportAllocs()
			next := 0
			for b.Loop() {
				call := &calls[next]
				c.Wait(context.Background(), call)
				if call.Err != nil {
					b.Fatal(call.Err)
				}
				c.Send(call, time.Now().Add(time.Minute))
				next = (next + 1) % depth
			}
			for range depth {
				c.Wait(context.Background(), &calls[next])
				next = (next + 1) % depth
			}
		})
		b.Run("callers="+strconv.Itoa(depth), func(b *testing.B) {
			// As many goroutines, each with one call in flight, most of
			// them blocked in Wait while one reads for all.
			c := newConn(b, server.Addr(), conn.Options{})
			b.ReportAllocs()
			b.SetParallelism(max(1, depth/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				call := conn.Call{Command: resp.AppendCommand(nil, "PING")}
				for pb.Next() {
					c.Send(&call, time.Now().Add(time.Minute))
					c.Wait(context.Background(), &call)
					if call.Err != nil {
						b.Error(call.Err)
						return
					}
				}
			})
		})
	}
}

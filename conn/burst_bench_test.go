package conn_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// burst is the number of commands, or pushes, of one op of the
// benchmarks below.
const burst = 1000

// BenchmarkListenPushes publishes a burst of messages to a channel that a
// Listen reads on another connection: one op is the burst, sent, answered
// and received. cpu-ns/push is this process's CPU per message (both
// connections; the server is another process).
func BenchmarkListenPushes(b *testing.B) {
	server := redistest.Start(b, redistest.Options{})
	received := make(chan struct{}, burst)
	listener := newConn(b, server.Addr(), conn.Options{Protocol: conn.ProtocolRESP3, OnPush: func(push resp.Value) error {
		if len(push.Elems) > 0 && string(push.Elems[0].Str) == "message" {
			received <- struct{}{}
		}
		return nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	listening := make(chan error, 1)
	go func() { listening <- listener.Listen(ctx, nil) }()
	b.Cleanup(func() { cancel(); <-listening })
	subscribe := resp.AppendCommand(nil, "SUBSCRIBE", "bench:pushes")
	if !listener.SendPush(subscribe) {
		b.Fatal("SUBSCRIBE not sent")
	}
	publisher := newConn(b, server.Addr(), conn.Options{})
	calls := make([]conn.Call, burst)
	for i := range calls {
		calls[i].Command = resp.AppendCommand(nil, "PUBLISH", "bench:pushes", "message")
	}
	publish := func() int64 {
		for i := range calls {
			publisher.Send(&calls[i], time.Now().Add(time.Minute))
		}
		publisher.Flush()
		var subscribers int64
		for i := range calls {
			publisher.Wait(context.Background(), &calls[i])
			if calls[i].Err != nil {
				b.Fatal(calls[i].Err)
			}
			subscribers += calls[i].Reply.Int
		}
		return subscribers
	}
	for publish() == 0 { // until the subscription is in
	}
	for len(received) > 0 {
		<-received
	}
	b.ReportAllocs()
	cpuBefore := processCPU(b)
	for b.Loop() {
		count := publish()
		for range count {
			<-received
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpuBefore).Nanoseconds())/float64(b.N*burst), "cpu-ns/push")
}

// BenchmarkQueueFollowed queues a burst of followed pairs on one
// connection, as the renewals of many holds do, and waits for their
// replies: one op is the burst. cpu-ns/pair is this process's CPU per
// pair.
func BenchmarkQueueFollowed(b *testing.B) {
	server := redistest.Start(b, redistest.Options{})
	c := newConn(b, server.Addr(), conn.Options{})
	calls, follows := make([]conn.Call, burst), make([]conn.Call, burst)
	for i := range calls {
		calls[i].Command = resp.AppendCommand(nil, "SET", "bench:followed", "value")
		follows[i].Command = resp.AppendCommand(nil, "GET", "bench:marker")
	}
	b.ReportAllocs()
	cpuBefore := processCPU(b)
	for b.Loop() {
		deadline := time.Now().Add(time.Minute)
		for i := range calls {
			c.QueueFollowed(&calls[i], &follows[i], deadline)
		}
		c.Flush()
		for i := range calls {
			c.Wait(context.Background(), &calls[i])
			c.Wait(context.Background(), &follows[i])
			if calls[i].Err != nil || follows[i].Err != nil {
				b.Fatal(calls[i].Err, follows[i].Err)
			}
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpuBefore).Nanoseconds())/float64(b.N*burst), "cpu-ns/pair")
}

// BenchmarkAggregateReplies sends a burst of commands whose replies are
// arrays (MGET of two keys) on one connection and waits for them: one op
// is the burst. cpu-ns/reply is this process's CPU per reply.
func BenchmarkAggregateReplies(b *testing.B) {
	server := redistest.Start(b, redistest.Options{})
	server.Do(b, "MSET", "bench:first", "29998", "bench:second", "2f1d6c0e9a7b4c3d8e5f60718293a4b5")
	c := newConn(b, server.Addr(), conn.Options{})
	calls := make([]conn.Call, burst)
	for i := range calls {
		calls[i].Command = resp.AppendCommand(nil, "MGET", "bench:first", "bench:second")
	}
	b.ReportAllocs()
	cpuBefore := processCPU(b)
	for b.Loop() {
		for i := range calls {
			c.Send(&calls[i], time.Now().Add(time.Minute))
		}
		c.Flush()
		for i := range calls {
			c.Wait(context.Background(), &calls[i])
			if calls[i].Err != nil || len(calls[i].Reply.Elems) != 2 {
				b.Fatal(calls[i].Err, calls[i].Reply)
			}
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpuBefore).Nanoseconds())/float64(b.N*burst), "cpu-ns/reply")
}

// processCPU returns the CPU time (user and system) of this process.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

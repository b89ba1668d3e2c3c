package faultnet

import (
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/internal/redistest"
)

func TestPass(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())

	c.send(pingCommand)
	c.expect(pong)

	assert.Equal(t, 1, proxy.Links())
	assert.Equal(t, int64(len(pingCommand)), proxy.BytesUp())
	assert.Equal(t, int64(len(pong)), proxy.BytesDown())
}

func TestPassLargeReply(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())
	value := strings.Repeat("0123456789abcdef", 1<<16) + "\r\n" // 1 MiB and a CRLF

	c.command("SET", "large", value)
	c.expect("+OK\r\n")
	c.command("GET", "large")
	c.expect("$1048578\r\n" + value + "\r\n")
	c.send(pingCommand)
	c.expect(pong)
}

func TestUpstreamDownResetsClient(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := listener.Addr().String()
	require.NoError(t, listener.Close())
	proxy := New(t, closedPort)

	conn, err := net.DialTimeout("tcp", proxy.Addr(), replyTimeout)
	if err == nil { // else the reset came before connect returned
		t.Cleanup(func() { conn.Close() })
		c := &client{t: t, conn: conn.(*net.TCPConn)}
		var got []byte
		got, err = c.readToEnd()
		assert.Empty(t, got)
	}
	assertCut(t, err)
}

func TestNewRejectsNonLoopback(t *testing.T) {
	tests := []struct {
		name     string
		upstream string
		loopback bool
	}{
		{name: "ipv4 loopback", upstream: "127.0.0.1:6379", loopback: true},
		{name: "ipv6 loopback", upstream: "[::1]:6379", loopback: true},
		{name: "localhost", upstream: "localhost:6379", loopback: true},
		{name: "remote", upstream: "10.0.0.1:6379"},
		{name: "any", upstream: "0.0.0.0:6379"},
		{name: "no port", upstream: "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.loopback, isLoopback(tt.upstream))
		})
	}
}

func TestDelay(t *testing.T) {
	const latency = 60 * time.Millisecond
	tests := []struct {
		name     string
		up, down time.Duration
	}{
		{name: "up", up: latency},
		{name: "down", down: latency},
		{name: "both", up: latency, down: latency},
	}
	server := redistest.Start(t, redistest.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			proxy.Delay(tt.up, tt.down)

			start := time.Now()
			c.send(pingCommand)
			c.expect(pong)
			elapsed := time.Since(start)

			assert.GreaterOrEqual(t, elapsed, tt.up+tt.down)
		})
	}
}

func TestDelayKeepsOrder(t *testing.T) {
	const latency = 150 * time.Millisecond
	first, second := "$5\r\nfirst\r\n", "$6\r\nsecond\r\n"
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())
	proxy.Delay(0, latency)

	start := time.Now()
	c.command("ECHO", "first")
	waitFor(t, "the first reply to reach the proxy", func() bool {
		return proxy.serverBytes.Load() == int64(len(first))
	})
	proxy.Delay(0, 0)
	c.command("ECHO", "second") // not delayed, but queued behind the first

	c.expect(first + second)
	assert.GreaterOrEqual(t, time.Since(start), latency)
}

func TestBlackhole(t *testing.T) {
	tests := []struct {
		name string
		cut  func(*Proxy)
	}{
		{name: "blackhole", cut: (*Proxy).Blackhole},
		{name: "partition", cut: (*Proxy).Partition},
	}
	server := redistest.Start(t, redistest.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := New(t, server.Addr())
			c := dial(t, proxy.Addr())
			c.send(pingCommand)
			c.expect(pong)
			tt.cut(proxy)

			c.command("SET", "blackholed-"+tt.name, "1")
			c.expectSilence()

			assert.Equal(t, "PONG", server.Do(t, "PING"), "the upstream is alive")
			assert.Equal(t, "(nil)", server.Do(t, "GET", "blackholed-"+tt.name), "the request was discarded")
			assert.Equal(t, 1, proxy.Links(), "the link stays open")

			proxy.Heal()
			c.command("ECHO", "healed")
			c.expect("$6\r\nhealed\r\n")
		})
	}
}

func TestHealDeliversNothingBlackholed(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())
	c.command("BLPOP", "queue", "0")
	waitFor(t, "BLPOP to block", func() bool {
		return strings.Contains(server.Do(t, "INFO", "clients"), "blocked_clients:1")
	})
	proxy.Blackhole()

	server.Do(t, "LPUSH", "queue", "x") // BLPOP replies into the blackhole
	waitFor(t, "the reply to reach the proxy", func() bool { return proxy.serverBytes.Load() > 0 })
	proxy.Heal()

	c.send(pingCommand)
	c.expect(pong) // the BLPOP reply is gone
	assert.Equal(t, int64(len(pong)), proxy.BytesDown())
}

func TestCutLinks(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	clients := []*client{dial(t, proxy.Addr()), dial(t, proxy.Addr())}
	for _, c := range clients {
		c.send(pingCommand)
		c.expect(pong)
	}
	require.Equal(t, 2, proxy.Links())

	proxy.CutLinks()

	for _, c := range clients {
		got, err := c.readToEnd()
		assert.Empty(t, got)
		assertCut(t, err)
	}
	waitFor(t, "the links to close", func() bool { return proxy.Links() == 0 })
	again := dial(t, proxy.Addr())
	again.send(pingCommand)
	again.expect(pong)
}

func TestHalfClosePassesThrough(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())

	c.send(pingCommand)
	require.NoError(t, c.conn.CloseWrite())

	got, err := c.readToEnd()
	assert.Equal(t, pong, string(got))
	assertCut(t, err)
	waitFor(t, "the link to close", func() bool { return proxy.Links() == 0 })
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	before := runtime.NumGoroutine()
	proxy := New(t, server.Addr())

	idle := dial(t, proxy.Addr())
	idle.send(pingCommand)
	idle.expect(pong)
	proxy.Delay(time.Hour, time.Hour)
	delayed := dial(t, proxy.Addr())
	delayed.send(pingCommand) // waits an hour in the up queue
	proxy.Pass()
	proxy.HoldReplies()
	held := dial(t, proxy.Addr())
	held.send(pingCommand) // its reply is held
	halfClosed := dial(t, proxy.Addr())
	halfClosed.send(pingCommand)
	require.NoError(t, halfClosed.conn.CloseWrite()) // held reply pending, client side done
	waitFor(t, "every link to open", func() bool { return proxy.Links() == 4 })
	// The accept loop, two pumps per link, but maybe one for the half-closed
	// link: its client→server pump ends with the client's EOF.
	require.GreaterOrEqual(t, runtime.NumGoroutine(), before+1+2*4-1)

	proxy.Close()

	assert.Equal(t, 0, proxy.Links())
	for _, c := range []*client{idle, delayed, held} {
		_, err := c.readToEnd()
		assertCut(t, err)
	}
	_, err := net.DialTimeout("tcp", proxy.Addr(), replyTimeout)
	assert.Error(t, err, "the listener is closed")
	proxy.Close() // twice is fine
	waitGoroutines(t, before)
}

func TestModesSwitchWhileForwarding(t *testing.T) {
	const pings = 300
	server := redistest.Start(t, redistest.Options{})
	proxy := New(t, server.Addr())
	c := dial(t, proxy.Addr())

	stop := make(chan struct{})
	var switching sync.WaitGroup
	switching.Add(1)
	go func() {
		defer switching.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 5 {
			case 0:
				proxy.Delay(time.Millisecond, time.Millisecond)
			case 1:
				proxy.HoldReplies()
			case 2:
				proxy.ReleaseReplies()
			case 3:
				proxy.DropReplies(0)
			case 4:
				proxy.Pass()
			}
			_ = proxy.Links() + int(proxy.RepliesDropped()+proxy.BytesUp()+proxy.BytesDown())
			runtime.Gosched()
		}
	}()
	for range pings {
		c.send(pingCommand)
	}
	close(stop)
	switching.Wait()
	proxy.Pass()

	c.expect(strings.Repeat(pong, pings))
	assert.Equal(t, int64(0), proxy.RepliesDropped())
}

// Retarget resets the open links and forwards the new ones to the new
// upstream.
func TestRetarget(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.Options{})
	proxy := New(t, servers[0].Addr())
	servers[1].Do(t, "SET", "where", "second")
	c := dial(t, proxy.Addr())
	c.send(pingCommand)
	c.expect(pong)

	proxy.Retarget(servers[1].Addr())

	got, err := c.readToEnd()
	assert.Empty(t, got)
	assertCut(t, err)
	again := dial(t, proxy.Addr())
	again.send("*2\r\n$3\r\nGET\r\n$5\r\nwhere\r\n")
	again.expect("$6\r\nsecond\r\n")
	assert.Panics(t, func() { proxy.Retarget("192.0.2.1:6379") })
}

package conn_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/internal/workgroup"
	"github.com/lockmux/lockmux/resp"
)

// newConn returns a connected Conn that is closed when the test ends.
func newConn(t testing.TB, address string, options conn.Options) *conn.Conn {
	t.Helper()
	c, err := conn.New(address, options)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx))
	return c
}

// do runs one command and returns its reply.
func do(t *testing.T, c *conn.Conn, arguments ...string) resp.Value {
	t.Helper()
	var call conn.Call
	call.Command = resp.AppendCommand(nil, arguments...)
	require.NoError(t, c.Do(context.Background(), &call))
	return call.Reply
}

func TestRoundTrip(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})

	assert.True(t, do(t, c, "SET", "k", "v", "NX", "PX", "10000").IsOK())
	assert.True(t, do(t, c, "SET", "k", "v", "NX", "PX", "10000").Null, "second SET NX must answer null")
	assert.Equal(t, "v", string(do(t, c, "GET", "k").Str))
	reply := do(t, c, "INCR", "k")
	assert.Equal(t, resp.TypeError, reply.Type)
	if server.IsReal() {
		assert.Equal(t, conn.ProtocolRESP3, c.Protocol())
		assert.Len(t, c.RunID(), 40)
	}
}

func TestPipelinedCallersGetTheirOwnReplies(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})

	const goroutines, rounds = 32, 200
	var callers workgroup.Group
	for g := range goroutines {
		callers.Go(func() error {
			var call conn.Call
			for i := range rounds {
				want := strconv.Itoa(g*rounds + i)
				call.Reset()
				call.Command = resp.AppendCommand(call.Command, "ECHO", want)
				deadline := time.Now().Add(5 * time.Second)
				c.Send(&call, deadline)
				c.Wait(context.Background(), &call)
				if call.Err != nil || string(call.Reply.Str) != want {
					return fmt.Errorf("goroutine %d: want %q, got %q (err %v)", g, want, call.Reply.Str, call.Err)
				}
			}
			return nil
		})
	}
	assert.NoError(t, callers.Wait())
}

func TestStoppedServerCostsOnlyTheDeadline(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{})
	require.True(t, do(t, c, "SET", "k", "v").IsOK())

	server.Stop()
	var call conn.Call
	call.Command = resp.AppendCommand(nil, "GET", "k")
	c.Send(&call, time.Now().Add(50*time.Millisecond))
	c.Wait(context.Background(), &call)
	require.Error(t, call.Err)
	assert.ErrorIs(t, call.Err, os.ErrDeadlineExceeded)
	assert.Less(t, call.Latency, time.Second, "a stopped server must cost about the deadline")
	assert.Zero(t, c.Protocol(), "a connection that timed out must be closed")

	server.Cont()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Connect(ctx))
	assert.Equal(t, "v", string(do(t, c, "GET", "k").Str))
}

func TestKilledServerIsReconnectedAfterRestart(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{Persistence: redistest.PersistenceAOF})
	c := newConn(t, server.Addr(), conn.Options{})
	require.True(t, do(t, c, "SET", "k", "v").IsOK())
	before := c.RunID()

	server.Kill9()
	var call conn.Call
	call.Command = resp.AppendCommand(nil, "GET", "k")
	c.Send(&call, time.Now().Add(time.Second))
	c.Wait(context.Background(), &call)
	require.Error(t, call.Err, "a command to a killed server cannot succeed")

	server.Restart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Eventually(t, func() bool { return c.Connect(ctx) == nil }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, "v", string(do(t, c, "GET", "k").Str))
	assert.NotEqual(t, before, c.RunID(), "a restarted server has a new run_id")
}

func TestDownServerFailsFastWithNotConnected(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	address := server.Addr()
	c, err := conn.New(address, conn.Options{BackoffMin: time.Hour, BackoffMax: time.Hour})
	require.NoError(t, err)
	defer c.Close()
	server.Kill9()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Error(t, c.Connect(ctx))
	var call conn.Call
	call.Command = resp.AppendCommand(nil, "PING")
	assert.False(t, c.Send(&call, time.Now().Add(time.Hour)))
	require.ErrorIs(t, call.Err, conn.ErrNotConnected)
	assert.Contains(t, call.Err.Error(), address, "errors name the node")
}

// flushedScriptCall returns a Conn whose server has forgotten its scripts
// (SCRIPT FLUSH) and a call of a loaded script that sets k to v.
func flushedScriptCall(t *testing.T) (*conn.Conn, *conn.Call) {
	t.Helper()
	server := redistest.Start(t, redistest.Options{})
	script := conn.NewScript("return redis.call('SET', KEYS[1], ARGV[1]) and 1")
	c := newConn(t, server.Addr(), conn.Options{Scripts: []*conn.Script{script}})
	require.True(t, do(t, c, "SCRIPT", "FLUSH").IsOK())
	call := &conn.Call{}
	call.SetScript(script, 1, 1)
	call.Command = resp.AppendBulkString(call.Command, "k")
	call.Command = resp.AppendBulkString(call.Command, "v")
	return c, call
}

func TestScriptFallsBackToEvalAfterScriptFlush(t *testing.T) {
	c, call := flushedScriptCall(t)
	require.NoError(t, c.Do(context.Background(), call))
	assert.Equal(t, resp.TypeInteger, call.Reply.Type, "reply %s", call.Reply)
	assert.Equal(t, int64(1), call.Reply.Int)
	assert.Equal(t, "v", string(do(t, c, "GET", "k").Str))
}

func TestAuthentication(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{
		Password: "secret",
		ACLUsers: []string{"locker on >lockerpw ~* +@all", "noeval on >noevalpw ~* +@all -eval -evalsha -script"},
	})
	tests := []struct {
		name     string
		address  string
		options  conn.Options
		wantAuth bool
	}{
		{name: "password in the URL", address: "redis://secret@" + server.Addr()},
		{name: "password in the options", address: server.Addr(), options: conn.Options{Password: "secret"}},
		{name: "ACL user", address: "redis://locker:lockerpw@" + server.Addr()},
		{name: "RESP2 with an ACL user", address: "redis://locker:lockerpw@" + server.Addr(), options: conn.Options{Protocol: conn.ProtocolRESP2}},
		{name: "no password", address: server.Addr(), wantAuth: true},
		{name: "wrong password", address: server.Addr(), options: conn.Options{Password: "wrong"}, wantAuth: true},
		{name: "RESP2 wrong password", address: server.Addr(), options: conn.Options{Password: "wrong", Protocol: conn.ProtocolRESP2}, wantAuth: true},
		{name: "user without script permission", address: "redis://noeval:noevalpw@" + server.Addr(),
			options: conn.Options{Scripts: []*conn.Script{conn.NewScript("return 1")}}, wantAuth: true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			c, err := conn.New(test.address, test.options)
			require.NoError(t, err)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = c.Connect(ctx)
			if test.wantAuth {
				require.Error(t, err)
				assert.ErrorIs(t, err, conn.ErrAuth)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.True(t, do(t, c, "SET", "k", "v").IsOK())
		})
	}
}

func TestTLS(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{TLS: true})
	c := newConn(t, "rediss://"+server.Addr(), conn.Options{TLSConfig: server.TLSConfig()})
	assert.True(t, do(t, c, "SET", "k", "v").IsOK())
	assert.Equal(t, "v", string(do(t, c, "GET", "k").Str))

	plain, err := conn.New("rediss://"+server.Addr(), conn.Options{})
	require.NoError(t, err)
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	assert.Error(t, plain.Connect(ctx), "an unknown certificate authority must be refused")
}

func TestRESP2ForcedOnRealServer(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{Protocol: conn.ProtocolRESP2})
	assert.True(t, do(t, c, "SET", "k", "v").IsOK())
	assert.True(t, do(t, c, "GET", "missing").Null)
	if server.IsReal() {
		assert.Equal(t, conn.ProtocolRESP2, c.Protocol())
	}
}

func TestCloseLeavesNoGoroutineOrDescriptor(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	goroutinesBefore := stableGoroutineCount(t, -1)
	descriptorsBefore := openDescriptors(t)

	for range 5 {
		c, err := conn.New(server.Addr(), conn.Options{})
		require.NoError(t, err)
		require.NoError(t, c.Connect(context.Background()))
		do(t, c, "PING")
		require.NoError(t, c.Close())
		var call conn.Call
		call.Command = resp.AppendCommand(nil, "PING")
		c.Send(&call, time.Now().Add(time.Second))
		assert.ErrorIs(t, call.Err, conn.ErrClosed)
	}
	stableGoroutineCount(t, goroutinesBefore)
	assert.Equal(t, descriptorsBefore, openDescriptors(t))
}

// A script call that meets NOSCRIPT after commands issued later were
// written is not replayed: the replay would run after them (a release of
// what it would acquire, say). Its owner gets the NOSCRIPT reply, and the
// script is loaded again for the calls to come.
func TestScriptReplayNeverJumpsTheQueue(t *testing.T) {
	c, call := flushedScriptCall(t)
	later := &conn.Call{Command: resp.AppendCommand(nil, "DEL", "k")}
	deadline := time.Now().Add(5 * time.Second)
	c.Send(call, deadline)
	c.Send(later, deadline)
	c.Wait(context.Background(), call)
	c.Wait(context.Background(), later)
	require.NoError(t, call.Err)
	require.NoError(t, later.Err)
	assert.Equal(t, "NOSCRIPT", string(resp.ErrorCode(call.Reply.Str)), "reply %s", call.Reply)
	assert.True(t, do(t, c, "GET", "k").Null, "the script must not have run after the DEL issued later")

	// The script was loaded again: the same call now runs as EVALSHA.
	require.NoError(t, c.Do(context.Background(), call))
	assert.Equal(t, int64(1), call.Reply.Int, "reply %s", call.Reply)
	assert.Equal(t, "v", string(do(t, c, "GET", "k").Str))
}

// A script call that meets NOSCRIPT with only its follow-up behind it is
// replayed as EVAL, and the follow-up is read again after the replay: its
// reply tells what the server held after the call ran.
func TestFollowedScriptIsReplayedWithItsFollowUp(t *testing.T) {
	c, call := flushedScriptCall(t)
	follow := &conn.Call{Command: resp.AppendCommand(nil, "GET", "k")}
	c.SendFollowed(call, follow, time.Now().Add(5*time.Second))
	c.Wait(context.Background(), call)
	c.Wait(context.Background(), follow)
	require.NoError(t, call.Err)
	require.NoError(t, follow.Err)
	assert.Equal(t, int64(1), call.Reply.Int, "reply %s", call.Reply)
	assert.Equal(t, "v", string(follow.Reply.Str), "the follow-up read the server before the replay")
}

// An abandoned script call that meets NOSCRIPT is never replayed: nobody
// waits for it, and a replay could come after commands issued later.
func TestAbandonedScriptCallIsNotReplayed(t *testing.T) {
	c, call := flushedScriptCall(t)
	c.Send(call, time.Now().Add(5*time.Second))
	c.Abandon(call)
	do(t, c, "PING") // reads the NOSCRIPT reply
	assert.True(t, do(t, c, "GET", "k").Null, "an abandoned script call must not be replayed")
}

// OnConnect has run by the time Connect returns: redlock relies on it to
// compare the run_ids of its nodes before New returns (RELIABILITY.md F29).
func TestOnConnectHasRunWhenConnectReturns(t *testing.T) {
	redistest.RequireReal(t) // miniredis reports no run_id
	server := redistest.Start(t, redistest.Options{})
	for range 20 {
		var mu sync.Mutex
		recorded := ""
		c, err := conn.New(server.Addr(), conn.Options{OnConnect: func(_, runID string) {
			mu.Lock()
			recorded = runID
			mu.Unlock()
		}})
		require.NoError(t, err)
		require.NoError(t, c.Connect(context.Background()))
		mu.Lock()
		got := recorded
		mu.Unlock()
		require.NotEmpty(t, c.RunID())
		require.Equal(t, c.RunID(), got, "OnConnect ran before Connect returned")
		c.Close()
	}
}

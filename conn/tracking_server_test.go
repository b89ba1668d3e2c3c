package conn_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockmux/lockmux/conn"
	"github.com/lockmux/lockmux/internal/redistest"
	"github.com/lockmux/lockmux/resp"
)

// What Redis does for a connection that tracks keys (CLIENT TRACKING ON,
// default mode) and is subscribed, as mux.Subscriber relies on it. These
// tests check the server, through a Conn: they are the evidence for the
// comments of mux/tracking.go.

// tracker is a RESP3 connection with tracking on, subscribed to a channel
// and read by Listen, whose pushes are logged in order.
type tracker struct {
	conn *conn.Conn
	mu   sync.Mutex
	log  []string      // "invalidate k", "invalidate <null>", "subscribe ch", ...
	seen chan struct{} // rings after a push is logged
}

func newTracker(t *testing.T, address string) *tracker {
	tr := &tracker{seen: make(chan struct{}, 1)}
	tr.conn = newConn(t, address, conn.Options{OnPush: func(push resp.Value) error {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		entry := string(push.Elems[0].Str)
		switch {
		case len(push.Elems) < 2:
		case push.Elems[1].Null:
			entry += " <null>"
		case push.Elems[1].Type == resp.TypeArray:
			for _, key := range push.Elems[1].Elems {
				entry += " " + string(key.Str)
			}
		default:
			entry += " " + string(push.Elems[1].Str)
		}
		tr.log = append(tr.log, entry)
		select {
		case tr.seen <- struct{}{}:
		default: // the doorbell rings already
		}
		return nil
	}})
	require.True(t, do(t, tr.conn, "CLIENT", "TRACKING", "ON").IsOK())
	require.True(t, tr.conn.SendPush(resp.AppendCommand(nil, "SUBSCRIBE", "releases")))
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- tr.conn.Listen(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-listened, context.Canceled)
	})
	require.Equal(t, "subscribe releases", tr.next(t))
	return tr
}

// taken returns the pushes logged so far and forgets them.
func (tr *tracker) taken() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	log := tr.log
	tr.log = nil
	return log
}

// next waits for a push, and returns it when it is the only one logged.
func (tr *tracker) next(t *testing.T) string {
	t.Helper()
	for {
		if log := tr.taken(); len(log) > 0 {
			require.Len(t, log, 1)
			return log[0]
		}
		receive(t, tr.seen)
	}
}

func TestTrackingInvalidationsOnASubscribedConnection(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	tr := newTracker(t, server.Addr())
	other := newConn(t, server.Addr(), conn.Options{})

	do(t, other, "SET", "k", "token", "PX", "10000")
	ttl := do(t, tr.conn, "PTTL", "k")
	require.Equal(t, resp.TypeInteger, ttl.Type, "a subscribed RESP3 connection runs ordinary commands")
	assert.Positive(t, ttl.Int)

	do(t, other, "PEXPIRE", "k", "100000")
	assert.Equal(t, "invalidate k", tr.next(t), "PTTL arms the key, and a PEXPIRE elsewhere invalidates it")

	do(t, other, "PEXPIRE", "k", "100000")
	do(t, tr.conn, "ECHO", "after")
	assert.Empty(t, tr.taken(), "an arming is ended by its invalidation: nothing before the reply to a later command")

	do(t, tr.conn, "GET", "k")
	do(t, other, "PEXPIRE", "k", "50")
	assert.Equal(t, "invalidate k", tr.next(t), "GET arms the key too")
	do(t, other, "SET", "short", "token", "PX", "300")
	require.Positive(t, do(t, tr.conn, "PTTL", "short").Int)
	assert.Equal(t, "invalidate short", tr.next(t), "the expiry of an armed key invalidates it")

	do(t, tr.conn, "PTTL", "missing")
	do(t, other, "SET", "missing", "token")
	assert.Equal(t, "invalidate missing", tr.next(t), "a read of a missing key arms it")

	do(t, tr.conn, "EVAL", "return redis.call('PTTL', KEYS[1])", "1", "missing")
	do(t, other, "EVAL", "return redis.call('PEXPIRE', KEYS[1], ARGV[1])", "1", "missing", "5000")
	assert.Equal(t, "invalidate missing", tr.next(t), "a script that reads arms its keys, and a script that writes invalidates")

	do(t, tr.conn, "GET", "k")
	do(t, other, "FLUSHALL")
	assert.Equal(t, "invalidate <null>", tr.next(t), "a flush is one invalidation with a null for the keys")

	do(t, other, "PUBLISH", "releases", "x")
	assert.Equal(t, "message releases", tr.next(t), "the subscription goes on")
}

// TestOwnWriteInvalidationComesBeforeTheArmingReply is the ordering that
// tells a holder's own writes from the others: the invalidation caused by
// a write on another connection, answered before a read is sent on the
// tracking connection, arrives before that read's reply. So a key armed
// again by a read after each own write is never invalidated by that write.
func TestOwnWriteInvalidationComesBeforeTheArmingReply(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	tr := newTracker(t, server.Addr())
	writer := newConn(t, server.Addr(), conn.Options{})

	do(t, writer, "SET", "k", "token", "PX", "10000")
	do(t, tr.conn, "PTTL", "k")
	for i := range 300 {
		do(t, writer, "PEXPIRE", "k", strconv.Itoa(10000+i)) // the own write
		do(t, tr.conn, "PTTL", "k")                          // the arming read
		require.Equal(t, []string{"invalidate k"}, tr.taken(), "write %d: its invalidation before the arming reply", i)
	}
}

// A RESP2 connection accepts CLIENT TRACKING ON, but the server has no way
// to push an invalidation on it: nothing arrives, which is why a RESP2
// server cannot track keys for mux.Subscriber.
func TestTrackingOnRESP2PushesNothing(t *testing.T) {
	redistest.RequireReal(t)
	server := redistest.Start(t, redistest.Options{})
	c := newConn(t, server.Addr(), conn.Options{Protocol: conn.ProtocolRESP2})
	other := newConn(t, server.Addr(), conn.Options{})
	require.True(t, do(t, c, "CLIENT", "TRACKING", "ON").IsOK())
	do(t, c, "GET", "k")
	do(t, other, "SET", "k", "v")
	assert.Equal(t, "PONG", string(do(t, c, "PING").Str), "no push came before the reply (it would close a RESP2 connection)")
}
